//! A tool's questions (`looopy_core::elicitation`): `looopy chat` asks for
//! each field of the requested schema at the prompt, checks the whole
//! answer against the schema, and sends it as the typed data part.
//! `/decline` or `/cancel` at any field answers with that action.

use looopy_core::elicitation::{ElicitationAnswer, ElicitationRequest};
use looopy_core::{Message, Role};
use serde_json::{Map, Value};

use super::approval::yes_or_no;
use super::input::{Input, LineReader};

/// What the person typed for one field.
enum Field {
    Value(Value),
    Skip,
    Decline,
    Cancel,
}

/// Asks each question field by field; the message carrying the answers,
/// or `None` when the user left (Ctrl-C, Ctrl-D).
pub(crate) async fn ask(reader: &LineReader, questions: &[ElicitationRequest]) -> Option<Message> {
    let mut parts = Vec::with_capacity(questions.len());
    for question in questions {
        parts.push(answer(reader, question).await?.to_part());
    }
    Some(Message::with_parts(Role::User, parts))
}

async fn answer(reader: &LineReader, question: &ElicitationRequest) -> Option<ElicitationAnswer> {
    // The question itself was shown with the turn's end.
    eprintln!(
        "({} asks; /decline or /cancel to not answer)",
        question.tool
    );
    let empty = Map::new();
    let properties = question
        .requested_schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = question
        .requested_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    loop {
        let mut content = Map::new();
        for (name, property) in properties {
            let needed = required.contains(&name.as_str());
            let prompt = prompt(name, property, needed);
            let value = loop {
                let line = match reader.read(&prompt).await {
                    Input::Line(line) => line,
                    Input::Interrupted | Input::Eof => return None,
                };
                match read_field(&line, property, needed) {
                    Ok(field) => break field,
                    Err(hint) => eprintln!("({hint})"),
                }
            };
            match value {
                Field::Value(value) => {
                    content.insert(name.clone(), value);
                }
                Field::Skip => {}
                Field::Decline => return Some(ElicitationAnswer::decline(question)),
                Field::Cancel => return Some(ElicitationAnswer::cancel(question)),
            }
        }
        match question.validate(&content) {
            Ok(()) => return Some(ElicitationAnswer::accept(question, content)),
            Err(error) => eprintln!("(that does not fit: {error}; once more)"),
        }
    }
}

/// `name (type, one of …, required): `.
fn prompt(name: &str, property: &Value, needed: bool) -> String {
    let title = property.get("title").and_then(Value::as_str);
    let mut about = vec![
        property
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string")
            .to_owned(),
    ];
    let choices = choices(property);
    if !choices.is_empty() {
        about.push(format!("one of {}", choices.join(", ")));
    }
    if needed {
        about.push("required".into());
    }
    match title {
        Some(title) if title != name => format!("{title} [{name}] ({}): ", about.join(", ")),
        _ => format!("{name} ({}): ", about.join(", ")),
    }
}

/// The values an enum field (or the items of a multi-select) allows, as
/// text.
fn choices(property: &Value) -> Vec<String> {
    let of = |p: &Value| -> Vec<String> {
        if let Some(values) = p.get("enum").and_then(Value::as_array) {
            return values.iter().map(text).collect();
        }
        ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| p.get(*k).and_then(Value::as_array))
            .flatten()
            .filter_map(|o| o.get("const"))
            .map(text)
            .collect()
    };
    match property.get("items") {
        Some(items) => of(items),
        None => of(property),
    }
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// Reads one typed line for `property`.
fn read_field(line: &str, property: &Value, needed: bool) -> Result<Field, String> {
    let line = line.trim();
    match line {
        "/decline" => return Ok(Field::Decline),
        "/cancel" => return Ok(Field::Cancel),
        "" if needed => return Err("this one is required".into()),
        "" => return Ok(Field::Skip),
        _ => {}
    }
    let value = match property.get("type").and_then(Value::as_str) {
        Some("integer") => Value::from(
            line.parse::<i64>()
                .map_err(|_| "a whole number".to_owned())?,
        ),
        Some("number") => {
            let n: f64 = line.parse().map_err(|_| "a number".to_owned())?;
            serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or("a finite number")?
        }
        Some("boolean") => Value::Bool(yes_or_no(line).ok_or("y or n")?),
        Some("array") => Value::Array(
            line.split(',')
                .map(|item| Value::String(item.trim().to_owned()))
                .filter(|item| item.as_str() != Some(""))
                .collect(),
        ),
        _ => Value::String(line.to_owned()),
    };
    Ok(Field::Value(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_read_as_their_fields_type() {
        let integer = json!({"type": "integer"});
        assert!(matches!(read_field(" 3 ", &integer, true), Ok(Field::Value(v)) if v == json!(3)));
        assert_eq!(
            read_field("lots", &integer, true).err().unwrap(),
            "a whole number"
        );
        assert_eq!(
            read_field("", &integer, true).err().unwrap(),
            "this one is required"
        );
        assert!(matches!(read_field("", &integer, false), Ok(Field::Skip)));
        assert!(matches!(
            read_field("/decline", &integer, true),
            Ok(Field::Decline)
        ));
        let flag = json!({"type": "boolean"});
        assert!(matches!(
            read_field("y", &flag, true),
            Ok(Field::Value(Value::Bool(true)))
        ));
        let many = json!({"type": "array", "items": {"enum": ["a", "b"]}});
        assert!(
            matches!(read_field("a, b", &many, true), Ok(Field::Value(v)) if v == json!(["a", "b"]))
        );
    }

    #[test]
    fn the_prompt_names_the_type_the_choices_and_whether_it_is_needed() {
        let colour = json!({"type": "string", "title": "Colour", "enum": ["red", "green"]});
        assert_eq!(
            prompt("colour", &colour, true),
            "Colour [colour] (string, one of red, green, required): "
        );
        let hero = json!({"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]});
        assert_eq!(prompt("hero", &hero, false), "hero (string, one of h1): ");
    }
}
