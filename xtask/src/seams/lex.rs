//! A small Rust lexer: enough to tell identifiers, paths and string
//! literals from comments and the rest, so that the counters never read a
//! path inside a comment or a string as code.

/// One token of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    /// An identifier or keyword (`r#type` is `type`; `$crate` keeps its `$`).
    Ident(String),
    /// A string literal's contents (escapes left as written).
    Str(String),
    /// `::`.
    PathSep,
    /// Any other single punctuation character.
    Punct(char),
    /// A number, a character literal or a lifetime.
    Other,
}

/// The tokens of `src`, comments dropped.
pub(super) fn lex(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&chars, i);
        } else if c == '"' {
            let (s, end) = quoted(&chars, i + 1);
            out.push(Tok::Str(s));
            i = end;
        } else if let Some((s, end)) = raw_or_byte_string(&chars, i) {
            out.push(Tok::Str(s));
            i = end;
        } else if c == '\'' {
            i = char_or_lifetime(&chars, i);
            out.push(Tok::Other);
        } else if c.is_ascii_digit() {
            i += 1;
            while i < chars.len()
                && (chars[i].is_alphanumeric()
                    || chars[i] == '_'
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            out.push(Tok::Other);
        } else if is_ident_start(c) || (c == '$' && next.is_some_and(is_ident_start)) {
            let start = i;
            i += 1;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let mut word: String = chars[start..i].iter().collect();
            if word == "r"
                && chars.get(i) == Some(&'#')
                && chars.get(i + 1).is_some_and(|c| is_ident_start(*c))
            {
                let s = i + 1;
                i = s;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                word = chars[s..i].iter().collect();
            }
            out.push(Tok::Ident(word));
        } else if c == ':' && next == Some(':') {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index after a (possibly nested) block comment starting at `i`.
fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth = depth.saturating_sub(1);
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The contents of a `"`-quoted string whose first character is at `i`,
/// and the index after its closing quote.
fn quoted(chars: &[char], mut i: usize) -> (String, usize) {
    let mut s = String::new();
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' && i + 1 < chars.len() {
            s.push(chars[i]);
            i += 1;
        }
        s.push(chars[i]);
        i += 1;
    }
    (s, (i + 1).min(chars.len()))
}

/// `r"…"`, `r#"…"#`, `b"…"`, `br"…"`, `c"…"` starting at `i`, if one does.
fn raw_or_byte_string(chars: &[char], i: usize) -> Option<(String, usize)> {
    if i > 0 && is_ident_char(chars[i - 1]) {
        return None;
    }
    let mut j = i;
    if matches!(chars.get(j), Some('b') | Some('c')) {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    if j == i {
        return None;
    }
    if !raw {
        return (chars.get(j) == Some(&'"')).then(|| quoted(chars, j + 1));
    }
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    let start = j + 1;
    let mut k = start;
    while k < chars.len() {
        if chars[k] == '"' && (0..hashes).all(|h| chars.get(k + 1 + h) == Some(&'#')) {
            return Some((chars[start..k].iter().collect(), k + 1 + hashes));
        }
        k += 1;
    }
    Some((chars[start..].iter().collect(), chars.len()))
}

/// The index after a character literal or a lifetime starting at `i`.
fn char_or_lifetime(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => {
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        (Some(_), Some('\'')) => i + 3,
        _ => {
            let mut j = i + 1;
            while j < chars.len() && is_ident_char(chars[j]) {
                j += 1;
            }
            j
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(src: &str) -> Vec<String> {
        lex(src)
            .into_iter()
            .filter_map(|t| match t {
                Tok::Ident(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_chars_and_lifetimes_hide_no_code() {
        let src = r###"
            // use crate::a;
            /* use crate::b; /* nested */ still comment */
            fn f<'a>(x: &'a str) -> char { let _ = "crate::c"; let _ = r#"crate::"d"#; 'e' }
        "###;
        assert_eq!(
            idents(src),
            ["fn", "f", "x", "str", "char", "let", "_", "let", "_"]
        );
        let strs: Vec<Tok> = lex(src)
            .into_iter()
            .filter(|t| matches!(t, Tok::Str(_)))
            .collect();
        assert_eq!(
            strs,
            [Tok::Str("crate::c".into()), Tok::Str("crate::\"d".into())]
        );
    }

    #[test]
    fn paths_raw_identifiers_and_macro_crate() {
        assert_eq!(
            lex("$crate::x r#type"),
            [
                Tok::Ident("$crate".into()),
                Tok::PathSep,
                Tok::Ident("x".into()),
                Tok::Ident("type".into())
            ]
        );
    }
}
