//! `twice`: the game. Parses the command line and assembles the plugins; nothing else.

use bevy::prelude::*;
use twice::operator_api::OperatorApi;

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
    let operator_api = match options.operator_api {
        Some(address) => match OperatorApi::start(address, options.allow_non_loopback, options.tokens.as_deref()) {
            Ok(operator_api) => {
                eprintln!("operator API: {}", operator_api.curl_hint());
                Some(operator_api)
            }
            Err(error) => {
                eprintln!("error: {error}");
                return AppExit::from_code(2);
            }
        },
        None => None,
    };
    let mut app = App::new();
    app.add_plugins(twice::AppPlugin { options, paths });
    if let Some(operator_api) = operator_api {
        app.insert_resource(operator_api);
    }
    app.run()
}
