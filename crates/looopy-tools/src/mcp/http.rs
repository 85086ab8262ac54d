//! The HTTP client under every streamable HTTP session (with or without
//! the trace and OAuth layers above it).

/// Built like rmcp's default client: no idle connection pool, and only
/// same-origin 307/308 redirects followed (at most 10).
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(same_origin_redirects())
        .build()
        .map_err(|e| format!("could not build the HTTP client: {e}"))
}

/// rmcp's redirect policy: a 307/308 keeps the POST's body, and a redirect to
/// another origin would hand it the session id and custom headers.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("exceeded 10 redirects")
        } else {
            attempt.follow()
        }
    })
}
