//! What `looopy serve` says when it starts: where it listens, the chat page,
//! the model, the store, the tools and whether callers must authenticate, so
//! a mistake in the configuration shows before the first request.

use looopy_stores::StoreConfig;

use crate::config::Config;

/// A URL with any `user:password@` removed (Redis URLs carry passwords).
fn without_credentials(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Whether the configuration names a model (after the environment).
pub fn has_model(config: &Config) -> bool {
    config.llm.as_ref().is_some_and(|l| {
        l.model.is_some() && (l.base_url.is_some() || l.model_ref().is_ok_and(|m| m.is_some()))
    })
}

fn model(config: &Config) -> String {
    let section = config.llm.as_ref();
    if let Some(m) = section.and_then(|l| l.model_ref().ok().flatten()) {
        return match section.and_then(|l| l.base_url.as_deref()) {
            Some(url) => format!("{m} at {}", without_credentials(url)),
            None => m.to_string(),
        };
    }
    match section.map(|l| (&l.model, &l.base_url)) {
        Some((Some(model), Some(url))) => format!("{model} at {}", without_credentials(url)),
        _ => "none".into(),
    }
}

fn store(config: &Config) -> String {
    match config.store().as_ref() {
        StoreConfig::Redis(r) if !r.cluster_urls.is_empty() => {
            let nodes: Vec<String> = r
                .cluster_urls
                .iter()
                .map(|u| without_credentials(u))
                .collect();
            format!("redis cluster ({})", nodes.join(", "))
        }
        StoreConfig::Redis(r) => format!("redis ({})", without_credentials(&r.url)),
        StoreConfig::Postgres(p) => format!(
            "postgres ({}, schema {})",
            without_credentials(&p.url),
            p.schema
        ),
        StoreConfig::Sqlite(s) => {
            let path = std::path::absolute(&s.path).unwrap_or_else(|_| s.path.clone());
            format!("sqlite ({})", path.display())
        }
        _ => "memory (conversations end with the process)".into(),
    }
}

fn tools(config: &Config) -> String {
    let t = &config.tools;
    let mut parts = Vec::new();
    if !t.mcp.is_empty() {
        let names: Vec<&str> = t.mcp.iter().map(|m| m.name.as_str()).collect();
        parts.push(format!("MCP: {}", names.join(", ")));
    }
    if !t.a2a.is_empty() {
        let names: Vec<&str> = t.a2a.iter().map(|a| a.name.as_str()).collect();
        parts.push(format!("remote agents: {}", names.join(", ")));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join("; ")
    }
}

fn auth(config: &Config) -> String {
    match config.auth.tokens.len() {
        0 => "off (anyone who reaches the port may use the agent)".into(),
        1 => "on (1 token)".into(),
        n => format!("on ({n} tokens)"),
    }
}

/// The banner's lines, for stderr; `url` is where clients reach the server.
/// Ends with a warning when no model is configured.
pub fn banner(config: &Config, url: &str) -> String {
    let url = url.trim_end_matches('/');
    let mut text = format!(
        "looopy {} serving agent '{}'\n  A2A       {url}/\n  chat page {url}/\n  model     {}\n  store     {}\n  tools     {}\n  auth      {}\n",
        env!("CARGO_PKG_VERSION"),
        config.agent.name,
        model(config),
        store(config),
        tools(config),
        auth(config),
    );
    if !has_model(config) {
        text.push_str("warning: ");
        text.push_str(NO_MODEL);
        text.push('\n');
    }
    text
}

/// The warning of a server with no model.
const NO_MODEL: &str = "no model is configured, so every turn will fail: set `model` in [llm] \
     (looopy.toml, --config) to a provider's model such as gemini:gemini-2.5-flash \
     (or --model), or `base_url` and `model`, or LOOOPY_LLM_BASE_URL and LOOOPY_LLM_MODEL";

/// The banner as log events, for logs that programs read
/// (`LOOOPY_LOG_FORMAT=json`): one `info` event with the banner's facts as
/// fields, then the warning of a server with no model as a `warn` event.
pub fn log(config: &Config, url: &str) {
    let url = url.trim_end_matches('/');
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        agent = %config.agent.name,
        a2a = %format_args!("{url}/"),
        model = %model(config),
        store = %store(config),
        tools = %tools(config),
        auth = %auth(config),
        "serving agent '{}'",
        config.agent.name,
    );
    if !has_model(config) {
        tracing::warn!("{NO_MODEL}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn passwords_are_kept_out_of_the_banner() {
        assert_eq!(
            without_credentials("redis://user:s3cret@cache:6379/0"),
            "redis://cache:6379/0"
        );
        let config = Config::parse(
            "[store]\nbackend = \"redis\"\nurl = \"redis://:hunter2@r:6379\"\n[[auth.tokens]]\nprincipal = \"a\"\ntoken = \"t\"\n",
        )
        .unwrap();
        let text = banner(&config, "http://h:1");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("redis (redis://r:6379)"), "{text}");
        assert!(text.contains("auth      on (1 token)"), "{text}");
        assert!(text.contains("warning: no model"), "{text}");
    }
}
