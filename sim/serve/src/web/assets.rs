//! The pages, compiled into the binary: plain HTML, CSS and JavaScript from `sim/web/`, so
//! the room needs no build tool and no files beside the binary at run time.
//!
//! An asset is found by its name in a fixed table; nothing a request says is used as a path.

use axum::extract::Path;
use axum::extract::rejection::PathRejection;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::error::WebError;
use super::views::shorten;

/// Scripts and styles only from this server, no inline code, no framing: a participant's
/// page runs nothing another participant typed (names are shown as text, never as HTML).
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const ASSETS: [Asset; 8] = [
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../../web/app.css"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/app.js"),
    },
    Asset {
        name: "code.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/code.js"),
    },
    Asset {
        name: "common.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/common.js"),
    },
    Asset {
        name: "presenter.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/presenter.js"),
    },
    Asset {
        name: "race.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/race.js"),
    },
    Asset {
        name: "join.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/join.js"),
    },
    Asset {
        name: "favicon.svg",
        content_type: "image/svg+xml",
        body: include_str!("../../web/favicon.svg"),
    },
];

const INDEX_HTML: &str = include_str!("../../web/index.html");
const PRESENTER_HTML: &str = include_str!("../../web/presenter.html");
const JOIN_HTML: &str = include_str!("../../web/join.html");

fn page(body: &'static str) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// `GET /`: the participants' page (title, level select, level screen, debrief).
pub(super) async fn index() -> Response {
    page(INDEX_HTML)
}

/// `GET /presenter`: the presenter's page; it reads its secret from the URL's fragment.
pub(super) async fn presenter_page() -> Response {
    page(PRESENTER_HTML)
}

/// `GET /join`: the join page for the projector: the room's address large, and its QR code.
pub(super) async fn join_page() -> Response {
    page(JOIN_HTML)
}

/// `GET /assets/{name}`: one of the files in [`ASSETS`].
pub(super) async fn asset(name: Result<Path<String>, PathRejection>) -> Result<Response, WebError> {
    let name = name.map(|Path(name)| name).unwrap_or_default();
    let asset = ASSETS.iter().find(|asset| asset.name == name).ok_or_else(|| {
        WebError::not_found(
            "no_such_asset",
            format!("no asset `{}`; the pages load theirs themselves", shorten(&name)),
        )
    })?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        asset.body,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::INDEX_HTML;

    /// The `?` list of the participants' page: `(keys, what they do)` from its `<dt>`/`<dd>` rows.
    fn help_rows() -> Vec<(String, String)> {
        let list = INDEX_HTML
            .split_once("<dl class=\"keys\">")
            .and_then(|(_, rest)| rest.split_once("</dl>"))
            .map(|(list, _)| list)
            .expect("the page has its list of keys");
        list.split("<dt>")
            .skip(1)
            .map(|row| {
                let (keys, rest) = row.split_once("</dt><dd>").expect("a <dd> after each <dt>");
                let (does, _) = rest.split_once("</dd>").expect("a closed <dd>");
                (keys.to_owned(), does.to_owned())
            })
            .collect()
    }

    /// The browser's help lists the keys twice-world's one list gives the browser, in its
    /// words and order: the same keys the window's overlay lists for the same actions.
    #[test]
    fn the_help_lists_the_keys_both_editions_share() {
        let listed = help_rows();
        let shared: Vec<(String, String)> = twice_world::keys::browser_keys()
            .map(|(keys, does)| (keys.to_owned(), does.to_owned()))
            .collect();
        assert_eq!(listed, shared);
    }
}
