//! Strict JSON bodies for every endpoint of the operator API and the browser edition: the
//! content type, the size, well-formed JSON and exactly the fields the endpoint takes, each
//! refused with its own status and code.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::api::ApiError;
use crate::api::views::shorten;

/// A JSON body: `Content-Type: application/json`, at most [`crate::api::BODY_BYTES_MAX`]
/// bytes (413), well-formed (400), and exactly the fields the endpoint takes (422).
#[derive(Debug)]
pub struct StrictJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for StrictJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if essence != "application/json" {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!(
                    "the body must be JSON sent as `Content-Type: application/json`, not `{}`",
                    shorten(content_type)
                ),
            ));
        }
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    format!(
                        "the body is larger than the {} bytes allowed",
                        crate::api::BODY_BYTES_MAX
                    ),
                )
            } else {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "unreadable_body",
                    format!("the body could not be read: {}", rejection.body_text()),
                )
            }
        })?;
        serde_json::from_slice(&bytes).map(StrictJson).map_err(|error| {
            if error.classify() == serde_json::error::Category::Data {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_body",
                    format!("body: {error}"),
                )
            } else {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "malformed_json",
                    format!("body is not JSON: {error}"),
                )
            }
        })
    }
}
