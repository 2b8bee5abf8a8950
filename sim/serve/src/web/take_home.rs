//! `GET /api/game/take-home?level=STEM`: the debrief's "Take it home" — the participant's run
//! of the open level as the cargo project `twice-sim export` writes (a program against
//! `twice-runtime`'s public API, with the level and the run's tape beside it:
//! `twice_world::take_home`), sent as one `STEM.tar.gz` holding the folder `STEM/`. The
//! browser keeps no files: the archive is built in memory for each request.

use std::path::Path;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use twice_world::export::{Files, RuntimeDependency};
use twice_world::take_home::TakeHomeError;

use super::WebState;
use super::error::WebError;
use super::handlers::Joined;
use super::views::shorten;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TakeHomeQuery {
    /// The level whose run the page shows (its stem or id): a page left on another level's
    /// debrief gets a clear answer, not the wrong project.
    level: String,
}

pub(super) async fn take_home(
    State(state): State<WebState>,
    joined: Joined,
    query: Result<Query<TakeHomeQuery>, QueryRejection>,
) -> Result<Response, WebError> {
    let Query(query) = query.map_err(|rejection| WebError::invalid(rejection.body_text()))?;
    let (stem, archive) = state
        .work(move |shared| {
            let (index, entry) = shared.catalogue.find(&query.level).ok_or_else(|| {
                WebError::not_found(
                    "unknown_level",
                    format!("level: no level `{}` in this room", shorten(&query.level)),
                )
            })?;
            let mut participant = joined.session().participant();
            let game = participant.game_mut(&shared.catalogue)?;
            if game.level_index != index {
                return Err(WebError::conflict(
                    "other_level",
                    format!(
                        "level: the level open in this session is {}, not {}: open it again to take its run home",
                        game.stem, entry.stem
                    ),
                ));
            }
            if game.conclusion().is_none() {
                return Err(WebError::conflict(
                    "not_over",
                    format!(
                        "{} is not over yet: the exported program plays a run to its end; run it to the end first",
                        game.stem
                    ),
                ));
            }
            // The room keeps its levels parsed; the level's file is the campaign's.
            let level_text = shared
                .catalogue
                .campaign()
                .levels
                .get(index)
                .map(|loaded| loaded.text.clone())
                .unwrap_or_default();
            let project = game
                .take_home(&level_text, &RuntimeDependency::here())
                .map_err(|error| match error {
                    TakeHomeError::Export(_) => WebError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "not_exportable",
                        format!("this run cannot be exported: {}", error.why()),
                    ),
                    other => WebError::logged("the run could not be taken home", other),
                })?;
            let archive = archive(&project.stem, &project.files)
                .map_err(|error| WebError::logged("the take-home archive could not be built", error))?;
            Ok((project.stem, archive))
        })
        .await?;
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{stem}.tar.gz\""))
        .map_err(|error| WebError::logged("the archive's file name is not a header value", error))?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/gzip")),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        archive,
    )
        .into_response())
}

/// `files` as a gzipped tar of the folder `folder/`: regular files, readable by everyone,
/// dated now (an archive tool warns about files from 1970).
pub fn archive(folder: &str, files: &Files) -> std::io::Result<Vec<u8>> {
    let now = super::now_unix_ms() / 1000;
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(now);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, Path::new(folder).join(path), text.as_bytes())?;
    }
    builder.into_inner()?.finish()
}

/// The debrief's button as the page draws it: where to download from, or why not.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TakeHomeView {
    /// `/api/game/take-home?level=STEM` when the run can be exported.
    pub href: Option<String>,
    /// The archive's name, `STEM.tar.gz`.
    pub file: String,
    /// Why the run cannot be exported, in the export's words (the button is disabled).
    pub why_not: Option<String>,
}

pub fn view(stem: &str, why_not: Option<String>) -> TakeHomeView {
    TakeHomeView {
        href: why_not.is_none().then(|| format!("/api/game/take-home?level={stem}")),
        file: format!("{stem}.tar.gz"),
        why_not,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::path::PathBuf;

    #[test]
    fn the_archive_holds_every_file_under_one_folder() {
        let files = vec![
            (PathBuf::from("Cargo.toml"), "[package]\n".to_owned()),
            (PathBuf::from("src/main.rs"), "fn main() {}\n".to_owned()),
        ];
        let bytes = super::archive("01-naive-retry", &files).expect("built");
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let mut seen = Vec::new();
        for entry in archive.entries().expect("entries") {
            let mut entry = entry.expect("an entry");
            let path = entry.path().expect("a path").display().to_string();
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("text");
            seen.push((path, text));
        }
        assert_eq!(
            seen,
            vec![
                ("01-naive-retry/Cargo.toml".to_owned(), "[package]\n".to_owned()),
                ("01-naive-retry/src/main.rs".to_owned(), "fn main() {}\n".to_owned()),
            ]
        );
    }
}
