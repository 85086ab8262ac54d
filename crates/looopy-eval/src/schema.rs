//! Validation of an answer against a JSON Schema: the keywords that
//! describe data shapes (`type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `const`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`,
//! `pattern`, `minItems`, `maxItems`, `allOf`, `anyOf`, `oneOf`, `not`).
//! Other keywords (`$ref`, `format`...) are not checked.

use regex::Regex;
use serde_json::Value;

/// The problems of `value` against `schema`, each with the JSON pointer of
/// where it is; empty when it is valid.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(schema, value, "", &mut problems);
    problems
}

fn type_matches(kind: &str, value: &Value) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value
            .as_f64()
            .is_some_and(|n| n.fract() == 0.0 && value.is_number()),
        _ => false,
    }
}

fn check(schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            out.push(format!("{at}: no value is allowed here"));
        }
        return;
    };
    let mut problem =
        |what: String| out.push(format!("{}: {what}", if at.is_empty() { "/" } else { at }));
    match schema.get("type") {
        Some(Value::String(kind)) if !type_matches(kind, value) => {
            problem(format!("must be of type {kind}"));
            return;
        }
        Some(Value::Array(kinds))
            if !kinds
                .iter()
                .filter_map(Value::as_str)
                .any(|k| type_matches(k, value)) =>
        {
            problem(format!(
                "must be of one of the types {}",
                Value::Array(kinds.clone())
            ));
            return;
        }
        _ => {}
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        problem(format!("must be one of {}", Value::Array(allowed.clone())));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        problem(format!("must be {constant}"));
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = number("minimum").filter(|min| n < *min) {
            problem(format!("must be at least {min}"));
        }
        if let Some(max) = number("maximum").filter(|max| n > *max) {
            problem(format!("must be at most {max}"));
        }
        if let Some(min) = number("exclusiveMinimum").filter(|min| n <= *min) {
            problem(format!("must be more than {min}"));
        }
        if let Some(max) = number("exclusiveMaximum").filter(|max| n >= *max) {
            problem(format!("must be less than {max}"));
        }
    }
    if let Some(text) = value.as_str() {
        let chars = text.chars().count() as f64;
        if let Some(min) = number("minLength").filter(|min| chars < *min) {
            problem(format!("must be at least {min} characters"));
        }
        if let Some(max) = number("maxLength").filter(|max| chars > *max) {
            problem(format!("must be at most {max} characters"));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            match Regex::new(pattern) {
                Ok(re) if !re.is_match(text) => problem(format!("must match {pattern:?}")),
                Ok(_) => {}
                Err(e) => problem(format!(
                    "the schema's pattern {pattern:?} does not compile: {e}"
                )),
            }
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as f64;
        if let Some(min) = number("minItems").filter(|min| len < *min) {
            problem(format!("must have at least {min} items"));
        }
        if let Some(max) = number("maxItems").filter(|max| len > *max) {
            problem(format!("must have at most {max} items"));
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(item_schema, item, &format!("{at}/{i}"), out);
            }
        }
    }
    if let Some(object) = value.as_object() {
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    out.push(format!("{at}/{name}: is required"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, item) in object {
            let here = format!("{at}/{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(property) => check(property, item, &here, out),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => out.push(format!("{here}: is not allowed")),
                    Some(extra @ Value::Object(_)) => check(extra, item, &here, out),
                    _ => {}
                },
            }
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check(sub, value, at, out);
        }
    }
    let passing = |subs: &Vec<Value>| {
        subs.iter()
            .filter(|s| validate(s, value).is_empty())
            .count()
    };
    let here = if at.is_empty() { "/" } else { at };
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
        && passing(any) == 0
    {
        out.push(format!("{here}: matches none of anyOf"));
    }
    if let Some(one) = schema.get("oneOf").and_then(Value::as_array) {
        let n = passing(one);
        if n != 1 {
            out.push(format!("{here}: matches {n} of oneOf, not exactly one"));
        }
    }
    if let Some(not) = schema.get("not")
        && validate(not, value).is_empty()
    {
        out.push(format!("{here}: matches the schema of `not`"));
    }
}

/// The JSON an answer holds: the whole text, or the inside of its first
/// fenced code block.
pub fn answer_json(answer: &str) -> Result<Value, serde_json::Error> {
    let text = answer.trim();
    let inner = text
        .split_once("```")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block.trim_start_matches("json").trim())
        .unwrap_or(text);
    serde_json::from_str(inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_are_checked_with_where_they_fail() {
        let schema = json!({
            "type": "object",
            "required": ["city", "temp"],
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "minLength": 2},
                "temp": {"type": "integer", "minimum": -90, "maximum": 60},
                "tags": {"type": "array", "items": {"enum": ["sunny", "rainy"]}}
            }
        });
        assert!(validate(&schema, &json!({"city": "Paris", "temp": 18})).is_empty());
        let problems = validate(
            &schema,
            &json!({"city": "P", "temp": 18.5, "tags": ["snow"], "x": 1}),
        );
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.starts_with("/tags/0")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p == "/x: is not allowed"),
            "{problems:?}"
        );
        assert_eq!(
            validate(&schema, &json!([1])),
            ["/: must be of type object"]
        );
        assert!(
            !validate(
                &json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                &json!(1)
            )
            .is_empty()
        );
    }

    #[test]
    fn answers_are_read_whole_or_from_their_fence() {
        assert_eq!(answer_json("{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert_eq!(
            answer_json("Here:\n```json\n{\"a\": 2}\n```").unwrap(),
            json!({"a": 2})
        );
        assert!(answer_json("no json").is_err());
    }
}
