//! The default model's block features (`runtime/stages/features.py`, layout
//! `bundle::FEATURES_VERSION`) for the engine: one row of `features::N_FEATURES` float32
//! values per block id, read from `map_html` by the core's `features` module, as
//! `native.block_features` reads them for Python (the HTML DOM's view of libxml2's tree).

/// Whether this build computes block features.
pub const AVAILABLE: bool = true;

/// `features.block_features(map_html, item_ids)`, row-major (the core refuses no page; a
/// panic is caught by the engine and fails the page).
pub fn block_features(map_html: &str, item_ids: &[Option<String>]) -> Result<Vec<f32>, String> {
    let ids: Vec<Option<&str>> = item_ids.iter().map(Option::as_deref).collect();
    Ok(crate::features::block_features(map_html, &ids, false))
}
