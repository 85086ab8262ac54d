//! What one source file says about its place in its crate: its `use`
//! declarations, the module paths it names in code, the modules it
//! declares, the public items it defines at its top level, its string
//! constants and the keys it reads from or writes to a `metadata` map.
//! Items under `#[cfg(test)]` are left out: the counts are of shipped code.

use super::lex::{Tok, lex};

/// One name a `use` declaration brings in (or a glob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Use {
    /// The names of the inline modules (`mod x { … }`) the declaration sits in.
    pub(super) inline: Vec<String>,
    /// Declared at module level (not inside a function or block).
    pub(super) module_level: bool,
    /// `pub use` (unrestricted visibility): a re-export.
    pub(super) public: bool,
    /// The path as written, `crate` / `super` / `self` included.
    pub(super) path: Vec<String>,
    /// The name it binds (`None` for a glob or `as _`).
    pub(super) binding: Option<String>,
    /// `path::*`.
    pub(super) glob: bool,
}

/// A `mod name;` declaration at the file's top level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ModDecl {
    /// The module's name.
    pub(super) name: String,
    /// `pub mod` (unrestricted visibility).
    pub(super) public: bool,
}

/// A `pub fn/struct/enum/trait/type/const` at the file's top level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    /// `fn`, `struct`, `enum`, `trait`, `type`, `const` or `union`.
    pub(super) kind: &'static str,
    /// Its name.
    pub(super) name: String,
}

/// The key a metadata access names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Key {
    /// A string literal.
    Literal(String),
    /// A constant, by its name (the last segment of its path).
    Const(String),
}

/// One `get` / `insert` / `remove` / index of a metadata map with a fixed key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MetaAccess {
    /// The key.
    pub(super) key: Key,
    /// `insert` or `entry` (otherwise a read).
    pub(super) write: bool,
}

/// Everything the counters read from one file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Facts {
    /// `use` declarations.
    pub(super) uses: Vec<Use>,
    /// Paths named in code (`crate::x::y`, `super::z`, `child::w`), with
    /// the inline modules they sit in; the first segment decides whether
    /// they lead into the crate.
    pub(super) paths: Vec<(Vec<String>, Vec<String>)>,
    /// `mod name;` declarations.
    pub(super) mods: Vec<ModDecl>,
    /// Public items at the top level.
    pub(super) items: Vec<Item>,
    /// `const NAME: &str = "value";` anywhere in the file.
    pub(super) str_consts: Vec<(String, String)>,
    /// Accesses of metadata maps with a fixed key.
    pub(super) meta: Vec<MetaAccess>,
    /// String literals read as a key from any map or JSON value
    /// (`.get("k")`, `.contains_key("k")`, `["k"]`).
    pub(super) literal_reads: Vec<String>,
    /// Upper-case identifiers named anywhere (constants, by name).
    pub(super) constants_named: std::collections::BTreeSet<String>,
}

const ITEM_KINDS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "union"];
const META_READS: &[&str] = &["get", "get_mut", "contains_key", "remove"];
const META_WRITES: &[&str] = &["insert", "entry"];

/// Reads the facts of one file's source.
pub(super) fn scan(src: &str) -> Facts {
    let toks = lex(src);
    let mut facts = Facts::default();
    let mut depth = 0usize;
    // Inline modules open: (name, depth inside their braces).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let module_depth = inline.last().map_or(0, |(_, d)| *d);
        match &toks[i] {
            Tok::Punct('#') if is_cfg_test(&toks, i) => {
                i = skip_item(&toks, after_attribute(&toks, i));
                continue;
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if w == "use" && !prev_is(&toks, i, &Tok::PathSep) => {
                let public = is_pub(&toks, i);
                let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
                let mut j = i + 1;
                let mut out = Vec::new();
                parse_use_tree(&toks, &mut j, Vec::new(), &mut out);
                for (path, binding, glob) in out {
                    for seg in path.iter().chain(binding.iter()).filter(|s| is_upper(s)) {
                        facts.constants_named.insert(seg.clone());
                    }
                    facts.uses.push(Use {
                        inline: names.clone(),
                        module_level: depth == module_depth,
                        public,
                        path,
                        binding,
                        glob,
                    });
                }
                i = j;
                continue;
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(Tok::Ident(name)), Some(next)) = (toks.get(i + 1), toks.get(i + 2)) {
                    if *next == Tok::Punct(';') && depth == 0 {
                        facts.mods.push(ModDecl {
                            name: name.clone(),
                            public: is_pub(&toks, i),
                        });
                    } else if *next == Tok::Punct('{') {
                        depth += 1;
                        inline.push((name.clone(), depth));
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(w) if w == "const" => {
                if let Some(pair) = str_const(&toks, i) {
                    facts.str_consts.push(pair);
                }
                if depth == 0
                    && is_pub(&toks, i)
                    && let Some(Tok::Ident(name)) = toks.get(i + 1)
                    && !["fn", "unsafe", "async", "extern"].contains(&name.as_str())
                {
                    facts.items.push(Item {
                        kind: "const",
                        name: name.clone(),
                    });
                }
            }
            Tok::Ident(w) if depth == 0 && ITEM_KINDS.contains(&w.as_str()) && is_pub(&toks, i) => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1) {
                    let kind = ITEM_KINDS
                        .iter()
                        .find(|k| **k == w.as_str())
                        .copied()
                        .unwrap_or("fn");
                    facts.items.push(Item {
                        kind,
                        name: name.clone(),
                    });
                }
            }
            Tok::Ident(w)
                if toks.get(i + 1) == Some(&Tok::PathSep) && !prev_is(&toks, i, &Tok::PathSep) =>
            {
                let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while toks.get(j) == Some(&Tok::PathSep) {
                    match toks.get(j + 1) {
                        Some(Tok::Ident(s)) => {
                            path.push(s.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                for seg in path.iter().filter(|s| is_upper(s)) {
                    facts.constants_named.insert(seg.clone());
                }
                facts.paths.push((names, path));
                i = j;
                continue;
            }
            Tok::Ident(w) if w.to_ascii_lowercase().contains("meta") => {
                if let Some(access) = meta_access(&toks, i) {
                    facts.meta.push(access);
                }
            }
            Tok::Ident(w) if is_upper(w) => {
                facts.constants_named.insert(w.clone());
            }
            Tok::Str(key) => {
                let get = i >= 3
                    && toks[i - 1] == Tok::Punct('(')
                    && matches!(&toks[i - 2], Tok::Ident(m) if m == "get" || m == "contains_key")
                    && toks[i - 3] == Tok::Punct('.');
                let index = i >= 1
                    && toks[i - 1] == Tok::Punct('[')
                    && toks.get(i + 1) == Some(&Tok::Punct(']'));
                if get || index {
                    facts.literal_reads.push(key.clone());
                }
            }
            _ => {}
        }
        i += 1;
    }
    facts
}

/// Whether a name is written like a constant (`SOME_KEY`).
fn is_upper(name: &str) -> bool {
    name.chars().any(char::is_alphabetic)
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn prev_is(toks: &[Tok], i: usize, tok: &Tok) -> bool {
    i > 0 && toks[i - 1] == *tok
}

/// Whether the item whose keyword is at `i` is `pub` without a restriction
/// (`pub(crate)` and `pub(super)` are not), looking back over `async`,
/// `unsafe`, `const` and `extern "C"`.
fn is_pub(toks: &[Tok], mut i: usize) -> bool {
    while i > 0 {
        i -= 1;
        match &toks[i] {
            Tok::Ident(w)
                if matches!(
                    w.as_str(),
                    "async" | "unsafe" | "const" | "extern" | "default"
                ) => {}
            Tok::Str(_) => {}
            Tok::Ident(w) => return w == "pub",
            Tok::Punct(')') => return false,
            _ => return false,
        }
    }
    false
}

/// Whether `#[cfg(test)]` (or `#[cfg(all(test, …))]`) starts at `i`.
fn is_cfg_test(toks: &[Tok], i: usize) -> bool {
    let want = [Tok::Punct('['), Tok::Ident("cfg".into()), Tok::Punct('(')];
    if toks.get(i + 1..i + 4) != Some(&want[..]) {
        return false;
    }
    let end = after_attribute(toks, i);
    toks[i + 4..end.min(toks.len())]
        .iter()
        .any(|t| *t == Tok::Ident("test".into()))
        && !toks[i + 4..end.min(toks.len())]
            .iter()
            .any(|t| *t == Tok::Ident("not".into()))
}

/// The index after the attribute starting at `i` (`#[…]`).
fn after_attribute(toks: &[Tok], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i + 1;
    while j < toks.len() {
        match toks[j] {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// The index after the item starting at `i` (further attributes included):
/// up to its `;` or the end of its first `{ … }` block.
fn skip_item(toks: &[Tok], mut i: usize) -> usize {
    while toks.get(i) == Some(&Tok::Punct('#')) {
        i = after_attribute(toks, i);
    }
    let mut nest = 0usize;
    while i < toks.len() {
        match toks[i] {
            Tok::Punct('(') | Tok::Punct('[') => nest += 1,
            Tok::Punct(')') | Tok::Punct(']') => nest = nest.saturating_sub(1),
            Tok::Punct(';') if nest == 0 => return i + 1,
            Tok::Punct('{') => {
                let mut depth = 0usize;
                while i < toks.len() {
                    match toks[i] {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return i;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Parses a use tree at `*i` under `prefix`, pushing (path, binding, glob);
/// leaves `*i` after the tree (after the `;` at the top level).
fn parse_use_tree(
    toks: &[Tok],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, bool)>,
) {
    let mut path = prefix;
    let start_len = path.len();
    if toks.get(*i) == Some(&Tok::PathSep) {
        *i += 1;
    }
    loop {
        match toks.get(*i) {
            Some(Tok::Ident(s)) if s == "self" && start_len > 0 && path.len() == start_len => {
                // `{self, …}`: the module itself.
                *i += 1;
                let binding = rename(toks, i).unwrap_or_else(|| path.last().cloned());
                out.push((path, binding, false));
                finish(toks, i);
                return;
            }
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
                if toks.get(*i) == Some(&Tok::PathSep) {
                    *i += 1;
                    continue;
                }
                let binding = rename(toks, i).unwrap_or_else(|| path.last().cloned());
                out.push((path, binding, false));
                finish(toks, i);
                return;
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push((path, None, true));
                finish(toks, i);
                return;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            break;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        None => return,
                        _ => parse_use_tree(toks, i, path.clone(), out),
                    }
                }
                finish(toks, i);
                return;
            }
            _ => {
                finish(toks, i);
                return;
            }
        }
    }
}

/// `as name` at `*i`: `Some(Some(name))`, `Some(None)` for `as _`.
fn rename(toks: &[Tok], i: &mut usize) -> Option<Option<String>> {
    if toks.get(*i) != Some(&Tok::Ident("as".into())) {
        return None;
    }
    *i += 1;
    let name = match toks.get(*i) {
        Some(Tok::Ident(n)) if n != "_" => Some(n.clone()),
        _ => None,
    };
    *i += 1;
    Some(name)
}

/// Steps over the `;` that ends a top-level use tree.
fn finish(toks: &[Tok], i: &mut usize) {
    if toks.get(*i) == Some(&Tok::Punct(';')) {
        *i += 1;
    }
}

/// `const NAME: &str = "value";` (or `&'static str`) at `i`.
fn str_const(toks: &[Tok], i: usize) -> Option<(String, String)> {
    let Some(Tok::Ident(name)) = toks.get(i + 1) else {
        return None;
    };
    if toks.get(i + 2) != Some(&Tok::Punct(':')) || toks.get(i + 3) != Some(&Tok::Punct('&')) {
        return None;
    }
    let mut j = i + 4;
    if toks.get(j) == Some(&Tok::Other) {
        j += 1;
    }
    if toks.get(j) != Some(&Tok::Ident("str".into())) || toks.get(j + 1) != Some(&Tok::Punct('=')) {
        return None;
    }
    match toks.get(j + 2) {
        Some(Tok::Str(v)) => Some((name.clone(), v.clone())),
        _ => None,
    }
}

/// A metadata access starting at the identifier at `i` (`metadata`,
/// `meta`, `metadata_mut()`, …): through `.as_object()`-like calls and `?`
/// to `.get(KEY)` / `.insert(KEY, …)` / `.remove(KEY)` / `[KEY]`.
fn meta_access(toks: &[Tok], i: usize) -> Option<MetaAccess> {
    let mut j = i + 1;
    let mut hops = 0;
    while hops < 12 {
        hops += 1;
        match toks.get(j)? {
            Tok::Punct('(') if toks.get(j + 1) == Some(&Tok::Punct(')')) => j += 2,
            Tok::Punct('?') => j += 1,
            Tok::Punct('[') => {
                return key_at(toks, j + 1).map(|key| MetaAccess { key, write: false });
            }
            Tok::Punct('.') => match toks.get(j + 1)? {
                Tok::Ident(m) if m.starts_with("as_") || m == "unwrap" => j += 2,
                Tok::Ident(m)
                    if META_READS.contains(&m.as_str()) || META_WRITES.contains(&m.as_str()) =>
                {
                    if toks.get(j + 2) != Some(&Tok::Punct('(')) {
                        return None;
                    }
                    let write = META_WRITES.contains(&m.as_str());
                    return key_at(toks, j + 3).map(|key| MetaAccess { key, write });
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    None
}

/// The fixed key at `j`: a string literal (optionally `&` or `.into()`), or
/// a constant (a path whose last segment is in upper case).
fn key_at(toks: &[Tok], mut j: usize) -> Option<Key> {
    while toks.get(j) == Some(&Tok::Punct('&')) {
        j += 1;
    }
    match toks.get(j)? {
        Tok::Str(s) => Some(Key::Literal(s.clone())),
        Tok::Ident(_) => {
            let mut last = None;
            while let Some(Tok::Ident(s)) = toks.get(j) {
                last = Some(s.clone());
                if toks.get(j + 1) == Some(&Tok::PathSep) {
                    j += 2;
                } else {
                    j += 1;
                    break;
                }
            }
            let last = last?;
            // `KEY.into()`, `KEY.to_string()`: the constant itself.
            if toks.get(j) == Some(&Tok::Punct('.'))
                && matches!(toks.get(j + 1), Some(Tok::Ident(m)) if ["into", "to_string", "to_owned"].contains(&m.as_str()))
            {
                j += 2;
                if toks.get(j) == Some(&Tok::Punct('('))
                    && toks.get(j + 1) == Some(&Tok::Punct(')'))
                {
                    j += 2;
                }
            }
            let upper = is_upper(&last);
            // A call (`key(…)`) or a field (`k.x`) is not a fixed key.
            (upper && !matches!(toks.get(j), Some(Tok::Punct('(')) | Some(Tok::Punct('.'))))
                .then_some(Key::Const(last))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn use_paths(f: &Facts) -> Vec<(String, Option<String>, bool)> {
        f.uses
            .iter()
            .map(|u| (u.path.join("::"), u.binding.clone(), u.glob))
            .collect()
    }

    #[test]
    fn use_trees_expand_to_one_path_per_name() {
        let f = scan("pub use crate::a::{self, b::C as D, e::*};\nuse super::F;");
        assert_eq!(
            use_paths(&f),
            [
                ("crate::a".into(), Some("a".into()), false),
                ("crate::a::b::C".into(), Some("D".into()), false),
                ("crate::a::e".into(), None, true),
                ("super::F".into(), Some("F".into()), false),
            ]
        );
        assert!(f.uses[0].public && f.uses[2].public && !f.uses[3].public);
    }

    #[test]
    fn test_modules_are_left_out_and_inline_modules_named() {
        let src = "mod inner { use super::x::Y; }\n#[cfg(test)]\nmod tests { use crate::z::W; }\nfn f() { crate::q::r(); }";
        let f = scan(src);
        assert_eq!(f.uses.len(), 1);
        assert_eq!(f.uses[0].inline, ["inner"]);
        assert_eq!(f.uses[0].path, ["super", "x", "Y"]);
        assert_eq!(
            f.paths,
            [(vec![], vec!["crate".to_string(), "q".into(), "r".into()])]
        );
    }

    #[test]
    fn public_items_are_top_level_and_unrestricted() {
        let src = "pub struct A; pub(crate) struct B; pub async fn c() {} pub const fn d() {}\n\
                   pub const E: u8 = 1; impl A { pub fn method(&self) {} } pub mod m; mod n;\n\
                   pub trait T { fn x(); } struct Private;";
        let f = scan(src);
        let items: Vec<(&str, &str)> = f.items.iter().map(|i| (i.kind, i.name.as_str())).collect();
        assert_eq!(
            items,
            [
                ("struct", "A"),
                ("fn", "c"),
                ("fn", "d"),
                ("const", "E"),
                ("trait", "T")
            ]
        );
        assert_eq!(
            f.mods,
            [
                ModDecl {
                    name: "m".into(),
                    public: true
                },
                ModDecl {
                    name: "n".into(),
                    public: false
                }
            ]
        );
    }

    #[test]
    fn metadata_keys_are_read_from_literals_and_constants() {
        let src = r#"
            pub const IS_ERROR: &str = "isError";
            fn f(m: &mut Message) {
                m.metadata.insert(IS_ERROR.into(), true.into());
                let _ = m.metadata.get("interrupted");
                let _ = meta.as_object()?.get(&looopy_core::KEY);
                let _ = m.metadata["x"];
                let _ = m.metadata.get(key(1));
            }"#;
        let f = scan(src);
        assert_eq!(
            f.str_consts,
            [("IS_ERROR".to_string(), "isError".to_string())]
        );
        let keys: Vec<(Key, bool)> = f.meta.iter().map(|a| (a.key.clone(), a.write)).collect();
        assert_eq!(
            keys,
            [
                (Key::Const("IS_ERROR".into()), true),
                (Key::Literal("interrupted".into()), false),
                (Key::Const("KEY".into()), false),
                (Key::Literal("x".into()), false),
            ]
        );
    }
}
