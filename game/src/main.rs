//! `twice`: the game. Parses the command line and assembles the plugins; nothing else.

use bevy::prelude::*;

fn main() -> AppExit {
    let options = match twice::options::Options::from_command_line() {
        Ok(options) => options,
        Err(exit) => return exit,
    };
    let paths = match twice::paths::GamePaths::resolve(&options) {
        Ok(paths) => paths,
        Err(error) => {
            eprintln!("error: {error}");
            return AppExit::from_code(2);
        }
    };
    // After the command line's own refusals (they need no display), before anything starts.
    if let Some(problem) = twice::display::missing_display(|name| std::env::var_os(name)) {
        eprintln!("error: {problem}");
        return AppExit::from_code(2);
    }
    #[cfg(feature = "operator-api")]
    let operator_api = match start_operator_api(&options) {
        Ok(operator_api) => operator_api,
        Err(exit) => return exit,
    };
    #[cfg(not(feature = "operator-api"))]
    if options.operator_api.is_some() {
        eprintln!(
            "error: --operator-api: this build of twice has no operator API (built without the `operator-api` feature)"
        );
        return AppExit::from_code(2);
    }
    let mut app = App::new();
    app.add_plugins(twice::AppPlugin { options, paths });
    #[cfg(feature = "operator-api")]
    if let Some(operator_api) = operator_api {
        app.insert_resource(operator_api);
    }
    app.run()
}

/// `--operator-api ADDR`: the server starts before the window opens, so a bad address or
/// tokens file exits 2 with the reason instead of a window that cannot serve.
#[cfg(feature = "operator-api")]
fn start_operator_api(options: &twice::options::Options) -> Result<Option<twice::operator_api::OperatorApi>, AppExit> {
    let Some(address) = options.operator_api else {
        return Ok(None);
    };
    match twice::operator_api::OperatorApi::start(address, options.allow_non_loopback, options.tokens.as_deref()) {
        Ok(operator_api) => {
            eprintln!("operator API: {}", operator_api.curl_hint());
            Ok(Some(operator_api))
        }
        Err(error) => {
            eprintln!("error: {error}");
            Err(AppExit::from_code(2))
        }
    }
}
