//! [`AgentCard`]: what a client reads from a card of either version.

use serde_json::Value;

use crate::server::AgentSkill;
use crate::version::ProtocolVersion;

/// A remote agent's card, read from its 1.0 or 0.3 form.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The agent's own version.
    pub version: String,
    /// The JSON-RPC endpoint of each protocol version it speaks over
    /// JSON-RPC, in the card's order of preference.
    pub interfaces: Vec<(ProtocolVersion, String)>,
    /// Whether it streams.
    pub streaming: bool,
    /// Its skills.
    pub skills: Vec<AgentSkill>,
    /// The card as received.
    pub raw: Value,
}

impl AgentCard {
    /// The endpoint for a version, when the agent speaks it.
    pub fn url_for(&self, version: ProtocolVersion) -> Option<&str> {
        self.interfaces
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, url)| url.as_str())
    }

    /// The newest version both sides speak.
    pub fn best_version(&self) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL
            .into_iter()
            .find(|v| self.url_for(*v).is_some())
    }

    /// Reads a card of either version.
    pub fn from_json(raw: Value) -> Result<Self, String> {
        let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
        let name = text("name").ok_or("the card has no `name`")?;
        let mut interfaces = Vec::new();
        if let Some(list) = raw.get("supportedInterfaces").and_then(Value::as_array) {
            for i in list {
                let binding = i
                    .get("protocolBinding")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let url = i.get("url").and_then(Value::as_str);
                let version = i
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .and_then(|v| v.parse::<ProtocolVersion>().ok());
                if let (true, Some(url), Some(version)) =
                    (binding.eq_ignore_ascii_case("JSONRPC"), url, version)
                    && !interfaces.iter().any(|(v, _)| *v == version)
                {
                    interfaces.push((version, url.to_owned()));
                }
            }
        }
        // The 0.3 fields: `url` with `protocolVersion` and `preferredTransport`.
        if let Some(url) = text("url") {
            let transport = text("preferredTransport").unwrap_or_else(|| "JSONRPC".into());
            let version = text("protocolVersion")
                .and_then(|v| v.parse::<ProtocolVersion>().ok())
                .unwrap_or(ProtocolVersion::V0_3);
            if transport.eq_ignore_ascii_case("JSONRPC")
                && !interfaces.iter().any(|(v, _)| *v == version)
            {
                interfaces.push((version, url));
            }
        }
        let skills = raw
            .get("skills")
            .and_then(Value::as_array)
            .map(|skills| {
                skills
                    .iter()
                    .map(|s| {
                        let field =
                            |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                        let list = |k: &str| {
                            s.get(k)
                                .and_then(Value::as_array)
                                .map(|a| {
                                    a.iter()
                                        .filter_map(|t| t.as_str().map(str::to_owned))
                                        .collect()
                                })
                                .unwrap_or_default()
                        };
                        AgentSkill {
                            id: field("id"),
                            name: field("name"),
                            description: field("description"),
                            tags: list("tags"),
                            examples: list("examples"),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(AgentCard {
            name,
            description: text("description").unwrap_or_default(),
            version: text("version").unwrap_or_default(),
            interfaces,
            streaming: raw
                .pointer("/capabilities/streaming")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            skills,
            raw,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn reads_both_card_forms() {
        let v1 = AgentCard::from_json(json!({
            "name": "A", "description": "d", "version": "1",
            "supportedInterfaces": [
                {"url": "http://h/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://h/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://h/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
            "capabilities": {"streaming": true},
            "skills": [{"id": "s", "name": "S", "description": "x", "tags": ["t"]}]
        }))
        .unwrap();
        assert_eq!(v1.best_version(), Some(ProtocolVersion::V1_0));
        assert_eq!(v1.url_for(ProtocolVersion::V0_3), Some("http://h/v03"));
        assert!(v1.streaming);
        assert_eq!(v1.skills[0].tags, ["t"]);

        let v03 = AgentCard::from_json(json!({
            "name": "B", "url": "http://h/", "protocolVersion": "0.3.0", "capabilities": {}
        }))
        .unwrap();
        assert_eq!(v03.best_version(), Some(ProtocolVersion::V0_3));
        assert!(!v03.streaming);
        assert!(AgentCard::from_json(json!({})).is_err());
    }
}
