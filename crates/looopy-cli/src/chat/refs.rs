//! What a line brings from the agent's MCP servers, by reference
//! (`looopy_core::mcp_ref`): `@server:uri` attaches a resource, and
//! `/prompt server:name key=value ...` starts from a prompt.

use looopy_core::mcp_ref::{McpPromptRef, McpRef, McpResourceRef};
use looopy_core::{Message, Part, Role};
use serde_json::{Map, Value};

/// The message a typed line sends: its text, with a reference part for
/// each `@server:uri` in it; or, for `/prompt`, the prompt's reference.
/// An error says how to write a `/prompt` line.
pub(crate) fn message_of(line: &str) -> Result<Message, String> {
    if let Some(rest) = line.strip_prefix("/prompt") {
        return prompt(rest.trim()).map(|p| Message::with_parts(Role::User, vec![p.to_part()]));
    }
    let mut parts = vec![Part::text(line)];
    parts.extend(
        line.split_whitespace()
            .filter_map(resource)
            .map(|r| r.to_part()),
    );
    Ok(Message::with_parts(Role::User, parts))
}

/// `@server:uri`, a server name of letters, digits, `_`, `-` and `.`.
fn resource(word: &str) -> Option<McpRef> {
    let (server, uri) = word.strip_prefix('@')?.split_once(':')?;
    let named = !server.is_empty()
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (named && !uri.is_empty()).then(|| {
        McpRef::Resource(McpResourceRef {
            server: server.to_owned(),
            uri: uri.to_owned(),
        })
    })
}

/// `server:name key=value ...`; a value with spaces in double quotes.
fn prompt(text: &str) -> Result<McpRef, String> {
    const USAGE: &str =
        "write /prompt server:name key=value ... (a value with spaces in \"double quotes\")";
    let mut words = split(text)?.into_iter();
    let target = words.next().ok_or(USAGE)?;
    let (server, name) = target
        .split_once(':')
        .filter(|(s, n)| !s.is_empty() && !n.is_empty())
        .ok_or(USAGE)?;
    let mut arguments = Map::new();
    for word in words {
        let (key, value) = word
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| format!("'{word}' is not key=value: {USAGE}"))?;
        arguments.insert(key.to_owned(), Value::String(value.to_owned()));
    }
    Ok(McpRef::Prompt(McpPromptRef {
        server: server.to_owned(),
        name: name.to_owned(),
        arguments,
    }))
}

/// Splits at blanks outside double quotes, dropping the quotes.
fn split(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if quoted {
        return Err("a double quote is not closed".into());
    }
    if started {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(message: &Message) -> Vec<McpRef> {
        message.parts.iter().filter_map(McpRef::from_part).collect()
    }

    #[test]
    fn at_server_colon_uri_attaches_a_resource_and_keeps_the_text() {
        let m = message_of("what is in @py:mem://notes/today and @x? mail me@home").unwrap();
        assert_eq!(
            m.text(),
            "what is in @py:mem://notes/today and @x? mail me@home"
        );
        assert_eq!(
            refs(&m),
            [McpRef::Resource(McpResourceRef {
                server: "py".into(),
                uri: "mem://notes/today".into()
            })]
        );
        assert!(refs(&message_of("@:x @a: plain").unwrap()).is_empty());
    }

    #[test]
    fn a_prompt_line_names_the_server_the_prompt_and_its_arguments() {
        let m = message_of(r#"/prompt py:review code="fn main() {}" language=Rust"#).unwrap();
        let found = refs(&m);
        let [McpRef::Prompt(p)] = found.as_slice() else {
            panic!("{m:?}");
        };
        assert_eq!((p.server.as_str(), p.name.as_str()), ("py", "review"));
        assert_eq!(p.arguments["code"], "fn main() {}");
        assert_eq!(p.arguments["language"], "Rust");
        assert!(m.text().is_empty(), "only the reference");
        for bad in [
            "/prompt",
            "/prompt review",
            "/prompt py:review code",
            r#"/prompt py:r a="x"#,
        ] {
            assert!(message_of(bad).is_err(), "{bad}");
        }
    }
}
