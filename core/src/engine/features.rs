//! The default model's block features (`runtime/stages/features.py`, layout
//! `bundle::FEATURES_VERSION`) for the engine: one row of `N_FEATURES` float32 values per
//! block id, read from `map_html`.
//!
//! The core's implementation of the features lives on another branch (`core/src/features`);
//! until it is merged this build has none, and an engine over a bundle with a rescorer is
//! refused when it opens (`AVAILABLE`), never run with made-up features.

/// Whether this build computes block features.
pub const AVAILABLE: bool = false;

/// `features.block_features(map_html, item_ids)`, row-major.
pub fn block_features(_map_html: &str, _item_ids: &[Option<String>]) -> Result<Vec<f32>, String> {
    Err("this build of the core computes no block features".to_string())
}
