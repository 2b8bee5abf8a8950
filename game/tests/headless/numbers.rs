//! Levels are numbered by their campaign position (`1.3`), in the level select and in the
//! level's header, as the browser numbers them: chapter 1's files are 01, 02, 21, 20 and 22,
//! numbers a newcomer saw jump.

use bevy_egui::egui;
use twice::campaign::Campaign;
use twice::progress::Progress;
use twice::screens::level::LevelUi;
use twice::screens::level::timeline::TimelineCache;
use twice::screens::level_select::{self, LevelSelectState};
use twice::ui::probe::{self, PROBE_FRAMES};

use super::{level_inputs, open_campaign_level};
use crate::support::game;

const WINDOW: (f32, f32) = (1280.0, 720.0);

#[test]
fn the_level_select_and_the_header_number_levels_by_campaign_position() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let world = app.world_mut();
    let campaign = world.remove_resource::<Campaign>().expect("the campaign");
    let third = campaign
        .levels
        .iter()
        .position(|loaded| loaded.path.ends_with("21-reads-retried.level.ron"))
        .expect("level 21 is in the campaign");
    let mut state = LevelSelectState::new(third, true);
    let drawn = {
        let mut progress = world.resource_mut::<Progress>();
        probe::frames(&probe::context(1.0), WINDOW, PROBE_FRAMES, Vec::new(), |context| {
            level_select::frame(context, &mut state, &campaign, &mut progress);
        })
    };
    app.world_mut().insert_resource(campaign);
    let texts: Vec<&str> = drawn.iter().map(|text| text.text.as_str()).collect();
    for position in ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1"] {
        assert!(texts.contains(&position), "the list numbers {position}: {texts:#?}");
    }
    assert!(!texts.contains(&"21"), "no file number in the list: {texts:#?}");

    open_campaign_level(&mut app, "21-reads-retried.level.ron");
    let inputs = level_inputs(&app);
    let (mut level_ui, mut cache) = (LevelUi::default(), TimelineCache::default());
    let drawn = probe::frames(
        &probe::context(1.0),
        WINDOW,
        PROBE_FRAMES,
        Vec::<egui::Event>::new(),
        |context| {
            let _asks = twice::screens::level::frame(context, &mut level_ui, &mut cache, &inputs);
        },
    );
    assert!(
        drawn.iter().any(|text| text.text == "1.3 · Look Twice, Knock Once"),
        "the header carries the position: {:#?}",
        drawn.iter().map(|text| &text.text).collect::<Vec<_>>()
    );
}
