//! Mapping MCP tool results to [`ToolResult`]s.

use looopy_core::{FileContent, Part, ToolFailure, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};

/// Maps one MCP content block to a part: text to text, images and audio to
/// inline files (base64 bytes and MIME type), embedded resources to text or
/// inline files, resource links to files by URI.
pub(crate) fn to_part(block: ContentBlock) -> Option<Part> {
    let part = match block {
        ContentBlock::Text(text) => Part::text(text.text),
        ContentBlock::Image(image) => inline_file(None, image.mime_type, image.data),
        ContentBlock::Audio(audio) => inline_file(None, audio.mime_type, audio.data),
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => Part::text(text),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Part::file(FileContent {
                blob: None,
                name: None,
                mime_type,
                uri: Some(uri),
                bytes: Some(blob),
            }),
            other => match serde_json::to_value(&other) {
                Ok(value) => Part::data(value),
                Err(_) => return None,
            },
        },
        ContentBlock::ResourceLink(link) => Part::file(FileContent {
            blob: None,
            name: Some(link.name),
            mime_type: link.mime_type,
            uri: Some(link.uri),
            bytes: None,
        }),
        // The union is non-exhaustive: a block of a later protocol version
        // is kept as JSON rather than lost.
        #[allow(unreachable_patterns)]
        other => match serde_json::to_value(&other) {
            Ok(value) => Part::data(value),
            Err(_) => return None,
        },
    };
    Some(part)
}

/// A file part of base64 `data` of `mime_type`, held inline.
pub(crate) fn inline_file(name: Option<String>, mime_type: String, data: String) -> Part {
    Part::file(FileContent {
        blob: None,
        name,
        mime_type: Some(mime_type),
        uri: None,
        bytes: Some(data),
    })
}

/// Maps a whole MCP result.
///
/// Structured content becomes a [`Part::Data`], and text blocks that merely
/// repeat it as JSON (which servers send for older clients) are dropped so
/// that the model does not read it twice. A structured result that only
/// wraps a scalar (`{"result": x}`) whose text is already there adds
/// nothing and is dropped instead. `isError` gives a `ToolFailure::Failed`
/// result whose first text starts with `Error: `.
pub(crate) fn to_tool_result(tool_call_id: String, result: CallToolResult) -> ToolResult {
    let mut content: Vec<Part> = result.content.into_iter().filter_map(to_part).collect();
    if let Some(data) = result.structured_content {
        let wrapped_and_shown =
            unwrapped(&data).is_some_and(|inner| content.iter().any(|p| text_is(p, inner)));
        if !wrapped_and_shown {
            content.retain(|p| !text_is(p, &data));
            content.push(Part::data(data));
        }
    }
    let is_error = result.is_error == Some(true);
    if is_error {
        match content.iter_mut().find_map(|p| match p {
            Part::Text { text } => Some(text),
            _ => None,
        }) {
            Some(text) if !text.starts_with("Error:") => *text = format!("Error: {text}"),
            Some(_) => {}
            None => content.insert(0, Part::text("Error: the tool failed")),
        }
    }
    let mut metadata = Map::new();
    if let Some(value) = result.meta.and_then(|m| serde_json::to_value(m).ok()) {
        metadata.insert("mcpMeta".into(), value);
    }
    ToolResult {
        tool_call_id,
        content,
        is_error,
        signal: None,
        metadata,
        failure: is_error.then_some(ToolFailure::Failed),
        artifacts: Vec::new(),
        source: None,
        cut_output: None,
    }
}

/// `x` when `data` is `{"result": x}`, the wrapping of a scalar result.
fn unwrapped(data: &Value) -> Option<&Value> {
    match data {
        Value::Object(map) if map.len() == 1 => map.get("result"),
        _ => None,
    }
}

/// Whether `part` is a text part that says `value`: the same string, or
/// `value` written as JSON.
fn text_is(part: &Part, value: &Value) -> bool {
    let Part::Text { text } = part else {
        return false;
    };
    match value {
        Value::String(s) => s == text,
        _ => serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_image_and_structured_content_map_to_parts() {
        let r = to_tool_result(
            "c1".into(),
            result(json!({
                "content": [
                    {"type": "text", "text": "{\"city\":\"Oslo\",\"celsius\":3.5}"},
                    {"type": "text", "text": "note"},
                    {"type": "image", "data": "iVBORw0=", "mimeType": "image/png"}
                ],
                "structuredContent": {"city": "Oslo", "celsius": 3.5}
            })),
        );
        assert!(!r.is_error);
        assert_eq!(r.content.len(), 3, "{:?}", r.content);
        assert_eq!(r.content[0], Part::text("note"));
        match &r.content[1] {
            Part::File { file } => {
                assert_eq!(file.mime_type.as_deref(), Some("image/png"));
                assert_eq!(file.bytes.as_deref(), Some("iVBORw0="));
            }
            other => panic!("expected a file, got {other:?}"),
        }
        assert_eq!(
            r.content[2],
            Part::data(json!({"city": "Oslo", "celsius": 3.5}))
        );
    }

    #[test]
    fn is_error_gives_a_prefixed_error_result() {
        let r = to_tool_result(
            "c2".into(),
            result(json!({"content": [{"type": "text", "text": "no such city"}], "isError": true})),
        );
        assert!(r.is_error);
        assert_eq!(r.text_content(), "Error: no such city");
        let r = to_tool_result("c3".into(), result(json!({"content": [], "isError": true})));
        assert!(r.is_error);
        assert!(r.text_content().starts_with("Error:"));
    }

    #[test]
    fn wrapped_scalar_results_are_not_repeated() {
        let r = to_tool_result(
            "c4".into(),
            result(
                json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"result": 42}}),
            ),
        );
        assert_eq!(r.content, vec![Part::text("42")]);
        let r = to_tool_result(
            "c5".into(),
            result(
                json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"result": "hi"}}),
            ),
        );
        assert_eq!(r.content, vec![Part::text("hi")]);
        // Structured content without a text copy is kept.
        let r = to_tool_result(
            "c6".into(),
            result(json!({"content": [], "structuredContent": {"result": 1}})),
        );
        assert_eq!(r.content, vec![Part::data(json!({"result": 1}))]);
    }
}
