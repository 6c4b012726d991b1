//! Outgoing HTTP: whole answers, answers within limits, streamed answers.

/// The response headers Hearth reads. The runtime's adapter hands over only
/// these: walking a response's whole list in the runtime costs more than a
/// few lookups, on every LLM call and chat send. Reading another one is a
/// test failure ([`HttpResponse::header`]) until it is added here.
pub const READ_HEADERS: [&str; 4] = ["content-type", "retry-after", "location", "mcp-session-id"];

fn is_read(name: &str) -> bool {
    READ_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// An outgoing HTTP request (to the LLM, Telegram, Discord).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u32,
}

impl HttpRequest {
    pub fn post_json(url: String, body: &serde_json::Value, timeout_ms: u32) -> Self {
        HttpRequest {
            method: "POST",
            url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: serde_json::to_vec(body).unwrap_or_default(),
            timeout_ms,
        }
    }
    pub fn get(url: String, timeout_ms: u32) -> Self {
        HttpRequest { method: "GET", url, headers: vec![], body: vec![], timeout_ms }
    }
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        debug_assert!(is_read(name), "{name} is not in READ_HEADERS: the runtime does not hand it over");
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Limits for a request whose answer nobody vouches for (a web page, an MCP
/// server's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Body bytes read; the rest is never downloaded.
    pub max_body_bytes: u64,
    /// Redirects come back as they are (a 3xx with `location`) for the
    /// caller to check each hop, instead of being followed.
    pub manual_redirects: bool,
}

/// A response read within [`FetchLimits`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LimitedResponse {
    pub response: HttpResponse,
    /// The body was longer than the limit and is cut there.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("request timed out")]
    Timeout,
    #[error("network error: {0}")]
    Network(String),
}

/// The pieces of a response body, in order, as the server writes them.
pub type BodyChunks = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Vec<u8>, HttpError>>>>;

/// A response whose body is read as it arrives (an LLM's server-sent events).
pub struct HttpStream {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: BodyChunks,
}

impl HttpStream {
    pub fn header(&self, name: &str) -> Option<&str> {
        debug_assert!(is_read(name), "{name} is not in READ_HEADERS: the runtime does not hand it over");
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The rest of the body, whole (an error answer, or a server that did
    /// not stream).
    pub async fn collect(mut self) -> Result<HttpResponse, HttpError> {
        use futures::StreamExt;
        let mut body = Vec::new();
        while let Some(piece) = self.body.next().await {
            body.extend_from_slice(&piece?);
        }
        Ok(HttpResponse { status: self.status, headers: self.headers, body })
    }
}

/// Outgoing HTTP.
#[allow(async_fn_in_trait)]
pub trait Http {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, HttpError>;

    /// `req` within `limits`. This default reads the whole answer and cuts
    /// it (for doubles); the Worker's adapter stops reading at the limit and
    /// leaves redirects to the caller when asked.
    async fn send_limited(&self, req: HttpRequest, limits: FetchLimits) -> Result<LimitedResponse, HttpError> {
        let mut response = self.send(req).await?;
        let max = usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX);
        let truncated = response.body.len() > max;
        response.body.truncate(max);
        Ok(LimitedResponse { response, truncated })
    }

    /// The same request, its body handed out piece by piece as it arrives.
    /// `timeout_ms` bounds the wait for the headers and for each piece. Only
    /// streamed LLM calls use it: reading a body in pieces costs a crossing
    /// into the runtime per piece, where [`Http::send`] reads it in one.
    /// Default: [`Http::send`], the body as one piece.
    async fn open(&self, req: HttpRequest) -> Result<HttpStream, HttpError> {
        let resp = self.send(req).await?;
        let body = resp.body;
        Ok(HttpStream {
            status: resp.status,
            headers: resp.headers,
            body: Box::pin(futures::stream::once(async move { Ok(body) })),
        })
    }
}
