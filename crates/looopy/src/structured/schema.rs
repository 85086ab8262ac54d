//! Making a schemars schema acceptable to OpenAI's strict mode.

use serde_json::Value;

/// `schema` adjusted for strict mode: every object lists all its properties
/// as required and allows no others (an `Option` field stays nullable, so
/// it reads as `None` from `null`). Returns whether strict mode can be
/// asked for: false when some object takes arbitrary keys (a map), which
/// strict mode cannot express.
pub fn strict_schema(mut schema: Value) -> (Value, bool) {
    let strict = tighten(&mut schema);
    (schema, strict)
}

fn tighten(value: &mut Value) -> bool {
    let mut strict = true;
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                let names: Vec<Value> = props.keys().cloned().map(Value::String).collect();
                map.insert("required".into(), Value::Array(names));
                match map.get("additionalProperties") {
                    None | Some(Value::Bool(false)) => {
                        map.insert("additionalProperties".into(), Value::Bool(false));
                    }
                    Some(_) => strict = false,
                }
            } else if map.get("type").and_then(Value::as_str) == Some("object") {
                // A map (`HashMap<String, _>`) or an open object.
                strict = false;
            }
            for child in map.values_mut() {
                strict &= tighten(child);
            }
        }
        Value::Array(items) => {
            for child in items {
                strict &= tighten(child);
            }
        }
        _ => {}
    }
    strict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_require_everything_and_maps_are_not_strict() {
        let (s, strict) = strict_schema(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]},
                           "inner": {"type": "object", "properties": {"c": {"type": "boolean"}}}},
            "required": ["a"]
        }));
        assert!(strict);
        assert_eq!(s["required"], json!(["a", "b", "inner"]));
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["inner"]["required"], json!(["c"]));
        let (_, strict) = strict_schema(json!({
            "type": "object", "additionalProperties": {"type": "integer"}
        }));
        assert!(!strict);
    }
}
