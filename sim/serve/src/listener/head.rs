//! A request's head, read under a deadline and checked the way hyper would parse it, so that
//! hyper never has to refuse anything itself.

use super::{ConnectionLimits, READ_CHUNK_BYTES};
use crate::api::{ApiError, BODY_BYTES_MAX, HEAD_BYTES_MAX, HEADERS_MAX, URI_BYTES_MAX};
use axum::http::{HeaderName, Method, StatusCode, Uri};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Why a head was not admitted.
pub(super) enum HeadError {
    /// The client went away before sending a whole head: nobody to answer.
    Closed,
    /// Answered with this error.
    Refused(Box<ApiError>),
}

impl From<ApiError> for HeadError {
    fn from(error: ApiError) -> HeadError {
        HeadError::Refused(Box::new(error))
    }
}

/// Reads until the request's head is complete and checks it. Returns every byte read (the
/// head and whatever of the body came with it) for hyper to read again.
pub(super) async fn read_head(stream: &mut TcpStream, limits: &ConnectionLimits) -> Result<Vec<u8>, HeadError> {
    let deadline = Instant::now() + limits.header_read_timeout;
    let mut read = Vec::with_capacity(READ_CHUNK_BYTES);
    let mut chunk = [0_u8; READ_CHUNK_BYTES];
    loop {
        let idle_deadline = Instant::now() + limits.idle_timeout;
        let count = match tokio::time::timeout_at(deadline.min(idle_deadline), stream.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) => return Err(HeadError::Closed),
            Ok(Ok(count)) => count,
            Err(_) => {
                let (waited_ms, what) = if deadline <= idle_deadline {
                    (
                        limits.header_read_timeout.as_millis(),
                        "the request's headers did not all arrive",
                    )
                } else {
                    (limits.idle_timeout.as_millis(), "no byte of the request arrived")
                };
                return Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request_timeout",
                    format!("{what} within {waited_ms} ms; send the whole request at once"),
                )
                .into());
            }
        };
        // Only the new bytes (and the three before them) can complete the head's end.
        let search_from = read.len().saturating_sub(3);
        read.extend_from_slice(&chunk[..count]);
        let tail = &read[search_from..];
        let complete = tail.windows(4).any(|window| window == b"\r\n\r\n") || tail.windows(2).any(|w| w == b"\n\n");
        // A head preceded by empty lines may look complete before its request line arrived.
        if complete && check_head(&read)? == Head::Complete {
            return Ok(read);
        }
        if read.len() > HEAD_BYTES_MAX {
            return Err(too_large_head(&read).into());
        }
    }
}

/// A head over [`HEAD_BYTES_MAX`]: 414 while its request line has not even ended, 431 otherwise.
pub(super) fn too_large_head(read: &[u8]) -> ApiError {
    if read.contains(&b'\n') {
        ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!("the request's head is over {HEAD_BYTES_MAX} bytes"),
        )
    } else {
        uri_too_long()
    }
}

pub(super) fn uri_too_long() -> ApiError {
    ApiError::new(
        StatusCode::URI_TOO_LONG,
        "uri_too_long",
        format!("the request's URI is over {URI_BYTES_MAX} bytes"),
    )
}

pub(super) fn malformed(detail: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "malformed_request",
        format!("not an HTTP/1.1 request: {detail}"),
    )
}

/// Whether the bytes read hold a whole head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Head {
    Complete,
    Partial,
}

/// Checks a head as hyper will parse it, so that hyper never has to refuse it itself.
pub(super) fn check_head(head: &[u8]) -> Result<Head, ApiError> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut headers);
    let head_bytes = match request.parse(head) {
        Ok(httparse::Status::Complete(head_bytes)) => head_bytes,
        Ok(httparse::Status::Partial) => return Ok(Head::Partial),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                format!("more than {HEADERS_MAX} headers"),
            ));
        }
        Err(error) => return Err(malformed(error)),
    };
    let path = request.path.unwrap_or_default();
    if path.len() > URI_BYTES_MAX {
        return Err(uri_too_long());
    }
    // The last read may have brought the end of a head already over the limit.
    if head_bytes > HEAD_BYTES_MAX {
        return Err(too_large_head(head));
    }
    Method::from_bytes(request.method.unwrap_or_default().as_bytes()).map_err(malformed)?;
    Uri::try_from(path).map_err(|error| malformed(format!("URI: {error}")))?;
    let is_http_11 = request.version == Some(1);
    // As hyper reads them: the last Transfer-Encoding decides, and a Content-Length after one
    // is ignored.
    let mut transfer_encoding_chunked = None;
    let mut content_length = None;
    for header in request.headers.iter() {
        let name = HeaderName::from_bytes(header.name.as_bytes()).map_err(malformed)?;
        if name == axum::http::header::TRANSFER_ENCODING {
            if !is_http_11 {
                return Err(malformed("HTTP/1.0 has no Transfer-Encoding"));
            }
            let last = std::str::from_utf8(header.value)
                .ok()
                .and_then(|value| value.rsplit(',').next())
                .map(str::trim);
            transfer_encoding_chunked = Some(last.is_some_and(|last| last.eq_ignore_ascii_case("chunked")));
        } else if name == axum::http::header::CONTENT_LENGTH && transfer_encoding_chunked.is_none() {
            let length = digits(header.value).ok_or_else(|| malformed("Content-Length is not a number of bytes"))?;
            if content_length.is_some_and(|earlier| earlier != length) {
                return Err(malformed("two different Content-Length headers"));
            }
            content_length = Some(length);
        }
    }
    if transfer_encoding_chunked == Some(false) {
        return Err(malformed("a request's Transfer-Encoding must end with chunked"));
    }
    if content_length.is_some_and(|length| length > BODY_BYTES_MAX as u64) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is larger than the {BODY_BYTES_MAX} bytes allowed"),
        ));
    }
    Ok(Head::Complete)
}

/// A Content-Length value: ASCII digits only (no sign, no spaces), as hyper reads it.
pub(super) fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    value.iter().try_fold(0_u64, |total, digit| {
        total.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status and code a head is refused with, if it is.
    type Refusal = Option<(StatusCode, &'static str)>;

    fn refusal(head: &[u8]) -> Refusal {
        match check_head(head) {
            Ok(verdict) => {
                assert_eq!(verdict, Head::Complete, "{}", String::from_utf8_lossy(head));
                None
            }
            Err(error) => Some((error.status, error.code)),
        }
    }

    #[test]
    fn empty_lines_before_a_request_line_wait_for_it() {
        assert_eq!(check_head(b"\r\n\r\n").unwrap(), Head::Partial);
        assert_eq!(check_head(b"\r\n\r\nGET / HTTP/1.1\r\n\r\n").unwrap(), Head::Complete);
    }

    #[test]
    fn heads_hyper_would_refuse_are_refused_first() {
        let long_uri = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(URI_BYTES_MAX));
        let big_header = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "b".repeat(HEAD_BYTES_MAX));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            (0..=HEADERS_MAX)
                .map(|number| format!("X-{number}: y\r\n"))
                .collect::<String>()
        );
        let cases: Vec<(&[u8], Refusal)> = vec![
            (b"GET /v1/tool-executions HTTP/1.1\r\nHost: x\r\n\r\n", None),
            (b"GET / HTTP/1.0\n\n", None),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 10\r\nContent-Length: 10\r\n\r\n",
                None,
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: x\r\n\r\n",
                None,
            ),
            (long_uri.as_bytes(), Some((StatusCode::URI_TOO_LONG, "uri_too_long"))),
            (
                big_header.as_bytes(),
                Some((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large")),
            ),
            (
                many.as_bytes(),
                Some((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large")),
            ),
            (b"GARBAGE\r\n\r\n", Some((StatusCode::BAD_REQUEST, "malformed_request"))),
            (
                b"GET / HTTP/2.0\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"GET /a b HTTP/1.1\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n",
                Some((StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")),
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
        ];
        for (head, expected) in cases {
            assert_eq!(refusal(head), expected, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn an_overlong_head_is_414_until_its_request_line_ends_and_431_after() {
        assert_eq!(too_large_head(b"GET /aaaa").status, StatusCode::URI_TOO_LONG);
        assert_eq!(
            too_large_head(b"GET / HTTP/1.1\r\nX: aaaa").status,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        );
    }

    #[test]
    fn content_lengths_are_plain_digits() {
        assert_eq!(digits(b"0"), Some(0));
        assert_eq!(digits(b"65536"), Some(65_536));
        for bad in [&b""[..], b"+1", b" 1", b"1 ", b"0x10", b"18446744073709551616"] {
            assert_eq!(digits(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
