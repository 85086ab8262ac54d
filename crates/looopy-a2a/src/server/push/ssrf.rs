//! The guard against server-side request forgery: a webhook URL is the
//! client's to choose, so without a guard any client could make the server
//! POST to its own loopback, to the private network it sits in, or to a
//! cloud metadata address. Unless private webhooks are allowed, a webhook
//! may only reach public unicast addresses.
//!
//! The check runs twice: when a config is created (so the client hears of
//! a refused URL at once) and at every connection, through the HTTP
//! client's DNS resolver ([`GuardedResolver`]), so a name that resolves
//! elsewhere later (DNS rebinding) is refused too. Redirects are not
//! followed and proxies are not used (see `delivery.rs`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// How long resolving a webhook's host may take when a config is created.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether an address is one a webhook may not reach unless private
/// webhooks are allowed: loopback, private (RFC 1918, unique local),
/// link-local, shared (CGNAT), unspecified, multicast, broadcast,
/// documentation and benchmarking ranges, and IPv4 reached through IPv6
/// (mapped or NAT64-style) when that IPv4 address is one of them.
pub(crate) fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            forbidden_v6(v6)
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
        || first == 0x2001 && ip.segments()[1] == 0x0db8 // documentation
        // 64:ff9b::/96 (NAT64): judged by the IPv4 address it carries.
        || (ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
            && forbidden_v4(Ipv4Addr::from(
                (u32::from(ip.segments()[6]) << 16) | u32::from(ip.segments()[7]),
            )))
}

/// Why a webhook URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    /// Not an absolute `http` or `https` URL.
    #[error("not an absolute http(s) URL: {0}")]
    Malformed(String),
    /// The host is, or resolves to, an address webhooks may not reach.
    #[error(
        "{host} is a loopback, private, link-local or otherwise non-public address; this server does not send webhooks there"
    )]
    Forbidden {
        /// The host as written.
        host: String,
    },
}

/// Parses a webhook URL and, unless `allow_private`, checks that its host
/// is and resolves only to public addresses. A name that does not resolve
/// (now) is accepted: deliveries check it again as they connect.
pub(crate) async fn check_url(url: &str, allow_private: bool) -> Result<Url, UrlError> {
    let parsed = Url::parse(url).map_err(|e| UrlError::Malformed(format!("{url} ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::Malformed(url.to_owned()));
    }
    let host = match parsed.host_str() {
        Some(h) if !h.is_empty() => {
            let bare = h.trim_start_matches('[').trim_end_matches(']');
            match bare.parse::<IpAddr>() {
                Ok(ip) => Host::Ip(ip),
                Err(_) => Host::Name(h.to_owned()),
            }
        }
        _ => return Err(UrlError::Malformed(url.to_owned())),
    };
    if allow_private {
        return Ok(parsed);
    }
    match host {
        Host::Ip(ip) if is_forbidden(ip) => Err(UrlError::Forbidden {
            host: ip.to_string(),
        }),
        Host::Ip(_) => Ok(parsed),
        Host::Name(name) => {
            let port = parsed.port_or_known_default().unwrap_or(443);
            let resolved = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((name.as_str(), port)),
            )
            .await;
            let addrs: Vec<SocketAddr> = match resolved {
                Ok(Ok(addrs)) => addrs.collect(),
                Ok(Err(error)) => {
                    tracing::debug!(%error, host = %name, "push: webhook host does not resolve (yet)");
                    return Ok(parsed);
                }
                Err(_) => {
                    tracing::debug!(host = %name, "push: resolving the webhook host timed out");
                    return Ok(parsed);
                }
            };
            if addrs.iter().any(|a| is_forbidden(a.ip())) {
                return Err(UrlError::Forbidden { host: name.clone() });
            }
            Ok(parsed)
        }
    }
}

/// Whether a URL's host is an IP address a webhook may not reach (names
/// are checked by [`GuardedResolver`] as they are resolved).
pub(crate) fn forbidden_literal(url: &str) -> bool {
    let Ok(parsed) = Url::parse(url) else {
        return true;
    };
    let host = parsed.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().is_ok_and(is_forbidden)
}

enum Host {
    Name(String),
    Ip(IpAddr),
}

/// The HTTP client's resolver: the system's, with every forbidden address
/// dropped; a name left with none fails to resolve. (A URL with an IP
/// literal host is not resolved: [`check_url`] checks it before each
/// delivery.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !is_forbidden(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(Box::new(UrlError::Forbidden { host })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn private_and_special_addresses_are_forbidden() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(
                is_forbidden(ip.parse().unwrap()),
                "{ip} should be forbidden"
            );
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip} should be allowed");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_unless_private_webhooks_are_allowed() {
        let refused = check_url("http://127.0.0.1:9/hook", false).await;
        assert!(
            matches!(refused, Err(UrlError::Forbidden { .. })),
            "{refused:?}"
        );
        let refused = check_url("http://[::1]/hook", false).await;
        assert!(
            matches!(refused, Err(UrlError::Forbidden { .. })),
            "{refused:?}"
        );
        let refused = check_url("http://localhost:8080/hook", false).await;
        assert!(
            matches!(refused, Err(UrlError::Forbidden { .. })),
            "{refused:?}"
        );
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check_url("https://8.8.8.8/hook", false).await.is_ok());
        // Not resolvable now: accepted, checked again at every connection.
        assert!(
            check_url("https://no-such-host.invalid/hook", false)
                .await
                .is_ok()
        );
        for bad in ["ftp://example.com/x", "not a url", "/relative"] {
            assert!(
                matches!(check_url(bad, true).await, Err(UrlError::Malformed(_))),
                "{bad}"
            );
        }
    }
}
