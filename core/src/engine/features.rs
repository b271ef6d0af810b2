//! The default model's block features (`runtime/stages/features.py`, layout
//! `bundle::FEATURES_VERSION`) for the engine: one row of `features::N_FEATURES` float32
//! values per block id, read from `map_html` by the core's `features` module, as
//! `native.block_features` reads them for Python (the HTML DOM's view of libxml2's tree).

/// Whether this build computes block features.
pub const AVAILABLE: bool = true;

/// Which block features a page is prepared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureSet {
    None,
    /// `blocks-v1`: `features::N_FEATURES` columns (the `accurate` rescorer's, the C library's)
    Blocks,
    /// `blocks-v2`: `blocks-v1` and the `features::N_EXTRAS` extras (the `fast` profile's)
    BlocksAndExtras,
    /// `blocks-v3`: `blocks-v2` and the `features::N_CONTAINERS` container identifiers
    BlocksExtrasAndContainers,
}

impl FeatureSet {
    /// The FFI value: 0 none, 1 `blocks-v1`, 2 `blocks-v2`, 3 `blocks-v3` (anything else:
    /// `blocks-v1`).
    pub fn from_ffi(value: u32) -> FeatureSet {
        match value {
            0 => FeatureSet::None,
            2 => FeatureSet::BlocksAndExtras,
            3 => FeatureSet::BlocksExtrasAndContainers,
            _ => FeatureSet::Blocks,
        }
    }

    /// Columns per row.
    pub fn width(self) -> usize {
        match self {
            FeatureSet::None => 0,
            FeatureSet::Blocks => crate::features::N_FEATURES,
            FeatureSet::BlocksAndExtras => crate::features::N_FEATURES + crate::features::N_EXTRAS,
            FeatureSet::BlocksExtrasAndContainers => {
                crate::features::N_FEATURES + crate::features::N_EXTRAS + crate::features::N_CONTAINERS
            }
        }
    }
}

/// `features.block_features(map_html, item_ids)`, row-major, with the extras when
/// `extras` and the container identifiers too when `containers` (the core refuses no page; a
/// panic is caught by the engine and fails the page).
pub fn block_features(
    map_html: &str,
    item_ids: &[Option<String>],
    extras: bool,
    containers: bool,
) -> Result<Vec<f32>, String> {
    let ids: Vec<Option<&str>> = item_ids.iter().map(Option::as_deref).collect();
    Ok(crate::features::block_features_with(map_html, &ids, false, extras, containers))
}
