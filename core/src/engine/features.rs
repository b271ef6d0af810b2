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
    /// `blocks-v4`: `blocks-v3` and the `features::N_DIALOGS` dialog columns
    BlocksExtrasContainersAndDialogs,
    /// `blocks-v5`: `blocks-v4` and the `features::N_RAILS` rail columns
    BlocksWithRails,
    /// `blocks-v6`: `blocks-v5` and the `features::N_TEASERS` teaser columns
    BlocksWithTeasers,
}

impl FeatureSet {
    /// The FFI value, the header's `PULPIE_RT_LAYOUT_*`: none, `blocks-v1` to `blocks-v6`
    /// (anything else: `blocks-v1`).
    pub fn from_ffi(value: u32) -> FeatureSet {
        use crate::abi::*;
        match value {
            PULPIE_RT_LAYOUT_NONE => FeatureSet::None,
            PULPIE_RT_LAYOUT_BLOCKS_V2 => FeatureSet::BlocksAndExtras,
            PULPIE_RT_LAYOUT_BLOCKS_V3 => FeatureSet::BlocksExtrasAndContainers,
            PULPIE_RT_LAYOUT_BLOCKS_V4 => FeatureSet::BlocksExtrasContainersAndDialogs,
            PULPIE_RT_LAYOUT_BLOCKS_V5 => FeatureSet::BlocksWithRails,
            PULPIE_RT_LAYOUT_BLOCKS_V6 => FeatureSet::BlocksWithTeasers,
            _ => FeatureSet::Blocks,
        }
    }

    /// The set of a layout name (`features.LAYOUTS`), or None for one this core does not
    /// compute.
    pub fn from_layout(name: &str) -> Option<FeatureSet> {
        match name {
            "blocks-v1" => Some(FeatureSet::Blocks),
            "blocks-v2" => Some(FeatureSet::BlocksAndExtras),
            "blocks-v3" => Some(FeatureSet::BlocksExtrasAndContainers),
            "blocks-v4" => Some(FeatureSet::BlocksExtrasContainersAndDialogs),
            "blocks-v5" => Some(FeatureSet::BlocksWithRails),
            "blocks-v6" => Some(FeatureSet::BlocksWithTeasers),
            _ => None,
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
            FeatureSet::BlocksExtrasContainersAndDialogs => {
                FeatureSet::BlocksExtrasAndContainers.width() + crate::features::N_DIALOGS
            }
            FeatureSet::BlocksWithRails => {
                FeatureSet::BlocksExtrasContainersAndDialogs.width() + crate::features::N_RAILS
            }
            FeatureSet::BlocksWithTeasers => FeatureSet::BlocksWithRails.width() + crate::features::N_TEASERS,
        }
    }
}

/// `features.block_features(map_html, item_ids, layout)`, row-major, in the columns of
/// `set`, read off `map_tree` where simplify gave it (`tree::read_back`), else off `map_html`
/// (none: no values; the core refuses no page; a panic is caught by the engine and
/// fails the page).
pub fn block_features(
    map_html: &str,
    map_tree: Option<&crate::tree::MapTree>,
    item_ids: &[Option<String>],
    set: FeatureSet,
) -> Result<Vec<f32>, String> {
    let ids: Vec<Option<&str>> = item_ids.iter().map(Option::as_deref).collect();
    let (extras, containers, dialogs, rails, teasers) = match set {
        FeatureSet::None => return Ok(Vec::new()),
        FeatureSet::Blocks => (false, false, false, false, false),
        FeatureSet::BlocksAndExtras => (true, false, false, false, false),
        FeatureSet::BlocksExtrasAndContainers => (true, true, false, false, false),
        FeatureSet::BlocksExtrasContainersAndDialogs => (true, true, true, false, false),
        FeatureSet::BlocksWithRails => (true, true, true, true, false),
        FeatureSet::BlocksWithTeasers => (true, true, true, true, true),
    };
    Ok(match map_tree {
        // the tree simplify made map_html of, as the specification reads it: no parse
        Some((tree, root)) => crate::features::block_features_of_tree(
            tree, *root, &ids, false, extras, containers, dialogs, rails, teasers,
        ),
        None => crate::features::block_features_with(
            map_html, &ids, false, extras, containers, dialogs, rails, teasers,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::FeatureSet;

    #[test]
    fn every_layout_a_rescorer_may_read_is_a_feature_set_of_its_width() {
        // the engine prepares a page in the set of its rescorer's (checked) layout
        for layout in super::super::LAYOUTS.iter().chain(super::super::CONTEXTS.iter().map(|(_, l)| l)) {
            assert!(FeatureSet::from_layout(layout).is_some(), "{layout}");
        }
        assert_eq!(FeatureSet::from_layout("blocks-v9"), None);
        let widths: Vec<usize> =
            ["blocks-v1", "blocks-v2", "blocks-v3", "blocks-v4", "blocks-v5", "blocks-v6"]
                .iter()
                .map(|l| FeatureSet::from_layout(l).unwrap().width())
                .collect();
        assert_eq!(widths, [166, 199, 207, 209, 216, 227]);
    }
}
