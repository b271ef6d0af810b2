//! A binary tree-ensemble classifier read from an ONNX `ai.onnx.ml` `TreeEnsembleClassifier`
//! (as onnxmltools writes LightGBM models) and evaluated to the bit as ONNX Runtime's CPU
//! kernel does, with an evaluation made for speed (QuickScorer, below).
//!
//! What ONNX Runtime computes (onnxruntime/core/providers/cpu/ml/tree_ensemble_*.h, ml_common.h),
//! and therefore what this file reproduces:
//! - a node sends a row to its true child when `x <mode> threshold` holds, every comparison in
//!   float32 (the input's type; the float thresholds unchanged), or when `x` is NaN and the
//!   node's `nodes_missing_value_tracks_true` is 1; otherwise to its false child;
//! - a tree's root is its first node in the node lists, trees are summed in the order of their
//!   first node, the sum kept in float32 and started at 0 (so the first leaf value is exact);
//! - with two classes, one class id for every weight (`binary_case_`), weights of both signs
//!   and no base values, the label is `classlabels[1]` when the sum is > 0, else
//!   `classlabels[0]`, and the probabilities with `post_transform` LOGISTIC are
//!   `[logistic(-s), logistic(s)]`, `logistic(v) = 1 / (1 + exp(-|v|))`, `1 - that` for v < 0.
//!
//! Anything else (other post-transforms, base values, several classes, weights of one sign,
//! string labels, double thresholds, a tree of more than 64 leaves) is refused with the
//! reason, and the caller runs ONNX Runtime instead.
//!
//! How a row is evaluated: no tree is walked. Every comparison becomes a test on the row's
//! *bin* for the node's feature, the number of that feature's split points below the value
//! (`x <= t` is `bin <= j` for `t` the j-th point, `x == c` is `bin == j` for `c` the j-th
//! point with `below(c)` the one before). Each tree's leaves (at most 64) are bits of a `u64`;
//! a node that sends the row away from its "left" child clears the bits of the leaves under
//! that child, and the row's leaf is then the lowest bit left (QuickScorer, Lucchese et al.,
//! SIGIR 2015). Which nodes clear bits for a bin is fixed when the model is read: per feature
//! and bin, a contiguous run of entries (tree, leaf bits), so the evaluation reads memory in
//! order, with no branch per node and no dependent loads. Rows go 16 at a time (their bins
//! are close): an entry is read once and applied to every row whose bin it holds for, lane by
//! lane (vectorised; AVX2 or AVX-512 when the processor has it). See `Layout` and `leaves_portable`.

use crate::onnx::{Attribute, AttributeType, Model, Node};

/// The widest input read (feature indices stay below it).
const MAX_FEATURES: i64 = 1 << 30;

/// Leaves a tree may have: one bit each in a `u64`.
const MAX_LEAVES: usize = 64;

/// Rows evaluated together: a node's entry is read once for all of them (each lane tests
/// its own row's bin), and their sums over the trees run side by side (each row's sum is a
/// chain of float additions that must stay in tree order).
const GROUP: usize = 16;

/// Points of a feature up to which a group's bins are counted against every point at once;
/// above it, each row's bin is a binary search (`bins_of`, the 16 side by side).
const LINEAR: usize = 32;

/// Columns up to which `Layout::new` numbers the features split on with a table by column
/// (wider inputs: a sort).
const DENSE_FEATURES: usize = 1 << 16;

/// Trees an entry can name.
const MAX_TREES: usize = u32::MAX as usize;

/// One entry: a tree whose leaves (bits) a node's test rules out, and for a `<=` node the
/// index of its point among its feature's.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Entry {
    leaves: u64,
    tree: u32,
    point: u32,
}

impl Entry {
    /// The leaves `lo..hi` of `tree`.
    fn new(tree: usize, lo: usize, hi: usize) -> Entry {
        debug_assert!(lo < hi && hi <= MAX_LEAVES);
        let leaves = if hi == MAX_LEAVES { !0u64 << lo } else { (1u64 << hi) - (1u64 << lo) };
        Entry { leaves, tree: tree as u32, point: 0 }
    }
}

/// A group's leaf bits for one tree, one `u64` a row (two cache lines).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Lanes([u64; GROUP]);

/// Applies `entries` to row `k` of a group's leaf bits.
///
/// # Safety
/// The entries' trees are below `bits.len()` (entries are made for the ensemble's
/// trees only) and `k < GROUP`.
#[inline(always)]
unsafe fn apply_row(bits: &mut [Lanes], entries: &[Entry], k: usize) {
    for e in entries {
        bits.get_unchecked_mut(e.tree as usize).0[k] &= !e.leaves;
    }
}

/// The instructions the evaluation is compiled for: one code (`leaves_portable`), compiled
/// three times; the widest this processor runs is chosen when the model is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Simd {
    /// whatever the crate is compiled for (x86-64's SSE2)
    Portable,
    /// AVX2: a group's 16 lanes of leaf bits in four 256-bit registers
    Avx2,
    /// AVX-512 (F, BW, VL): in two 512-bit registers, comparisons into mask registers
    Avx512,
}

impl Simd {
    pub const ALL: [Simd; 3] = [Simd::Portable, Simd::Avx2, Simd::Avx512];

    /// Whether this processor runs it.
    pub fn detected(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Simd::Portable => true,
                Simd::Avx2 => std::is_x86_feature_detected!("avx2"),
                Simd::Avx512 => {
                    std::is_x86_feature_detected!("avx512f")
                        && std::is_x86_feature_detected!("avx512bw")
                        && std::is_x86_feature_detected!("avx512vl")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Simd::Portable
        }
    }

    /// The widest this processor runs.
    pub fn best() -> Simd {
        Simd::ALL.into_iter().rev().find(|simd| simd.detected()).unwrap_or(Simd::Portable)
    }
}

/// For each entry, the rows of a group whose bin is up to the entry's point (`ABOVE`: above
/// it) have its leaves cleared: `leaves_portable`'s lane loop as AVX-512 computes it (the
/// bins compared into two masks, the leaves cleared by a masked and-not, eight rows a
/// register), so the same bits.
///
/// # Safety
/// The processor runs AVX-512 F; the entries' trees are below `bits.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn apply_masked_avx512<const ABOVE: bool>(bits: &mut [Lanes], entries: &[Entry], bins: &[i64; GROUP]) {
    use std::arch::x86_64::*;
    let low = _mm512_loadu_si512(bins.as_ptr() as *const __m512i);
    let high = _mm512_loadu_si512(bins.as_ptr().add(8) as *const __m512i);
    for e in entries {
        let point = _mm512_set1_epi64(e.point as i64);
        let (m_low, m_high) = if ABOVE {
            (_mm512_cmpgt_epi64_mask(low, point), _mm512_cmpgt_epi64_mask(high, point))
        } else {
            (_mm512_cmple_epi64_mask(low, point), _mm512_cmple_epi64_mask(high, point))
        };
        let leaves = _mm512_set1_epi64(e.leaves as i64);
        // Lanes is 64-byte aligned: two aligned registers
        let lanes = bits.get_unchecked_mut(e.tree as usize).0.as_mut_ptr() as *mut __m512i;
        let (a, b) = (_mm512_load_si512(lanes), _mm512_load_si512(lanes.add(1)));
        _mm512_store_si512(lanes, _mm512_mask_andnot_epi64(a, m_low, leaves, a));
        _mm512_store_si512(lanes.add(1), _mm512_mask_andnot_epi64(b, m_high, leaves, b));
    }
}

/// What a feature's value selects: its bins' entry runs (see `Layout`).
#[derive(Clone, Copy, Debug)]
struct Feature {
    /// the column of a row
    column: u32,
    /// its split points: `points[first..first + count]`
    points_first: u32,
    points_count: u32,
    /// its slots: `slots[first + bin]` for bins 0..=count, `slots[first + count + 1]` for NaN
    slots_first: u32,
    /// whether a bin of it lists entries (a categorical node reads it); NaN always may
    listed: bool,
}

/// The trees of a binary classifier, laid out for evaluation.
#[derive(Clone, Debug)]
pub struct TreeEnsemble {
    /// the tables the trees are evaluated with
    tables: Layout,
    /// the instructions it runs with (the widest detected when the model is read)
    simd: Simd,
    trees: usize,
    /// the widest feature index read + 1
    min_columns: usize,
    /// the graph's input width when it fixes one
    columns: Option<usize>,
    labels: [i64; 2],
    /// the output probabilities multiplied by this (a `Mul` by a constant after the trees)
    scale: Option<f32>,
    nodes: usize,
}

/// Why an ONNX model's trees are not run by this kernel (the caller says so and runs ONNX
/// Runtime), or why its bytes are not a model at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(message: impl Into<String>) -> Result<T, Unsupported> {
    Err(Unsupported(message.into()))
}

/// Node comparison modes as the ONNX operator names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Leq,
    Lt,
    Gte,
    Gt,
    Eq,
    Neq,
    Leaf,
}

impl Mode {
    fn parse(name: &[u8]) -> Result<Mode, Unsupported> {
        Ok(match name {
            b"BRANCH_LEQ" => Mode::Leq,
            b"BRANCH_LT" => Mode::Lt,
            b"BRANCH_GTE" => Mode::Gte,
            b"BRANCH_GT" => Mode::Gt,
            b"BRANCH_EQ" => Mode::Eq,
            b"BRANCH_NEQ" => Mode::Neq,
            b"LEAF" => Mode::Leaf,
            other => return refuse(format!("node mode {:?}", String::from_utf8_lossy(other))),
        })
    }
}

/// The largest float below `t` (for `x < t` as `x <= below(t)`), NaN when there is none
/// (`x < -inf` never holds, nor does `x <= NaN`).
fn below(t: f32) -> f32 {
    if t.is_nan() || t == f32::NEG_INFINITY {
        return f32::NAN;
    }
    if t == 0.0 {
        return -f32::from_bits(1); // below both zeros: the negative smallest subnormal
    }
    let bits = t.to_bits();
    f32::from_bits(if t > 0.0 { bits - 1 } else { bits + 1 })
}

fn ints<'a>(node: &'a Node<'_>, name: &str) -> &'a [i64] {
    node.attribute(name).map(|a| a.ints.as_slice()).unwrap_or(&[])
}

fn floats<'a>(node: &'a Node<'_>, name: &str) -> &'a [f32] {
    node.attribute(name).map(|a| a.floats.as_slice()).unwrap_or(&[])
}

/// Attributes of a TreeEnsembleClassifier this kernel reads, or knows it may ignore.
const KNOWN_ATTRIBUTES: [&str; 15] = [
    "class_ids",
    "class_nodeids",
    "class_treeids",
    "class_weights",
    "classlabels_int64s",
    "nodes_falsenodeids",
    "nodes_featureids",
    "nodes_hitrates",
    "nodes_missing_value_tracks_true",
    "nodes_modes",
    "nodes_nodeids",
    "nodes_treeids",
    "nodes_truenodeids",
    "nodes_values",
    "post_transform",
];

impl TreeEnsemble {
    /// Reads the trees behind the graph output `output` (the `[rows, 2]` float probabilities)
    /// of a serialized ONNX model.
    pub fn from_onnx(bytes: &[u8], output: &str) -> Result<TreeEnsemble, Unsupported> {
        let model = crate::onnx::parse_model(bytes)
            .map_err(|e| Unsupported(format!("not a readable ONNX model: {e}")))?;
        TreeEnsemble::from_model(&model, output)
    }

    pub fn from_model(model: &Model<'_>, output: &str) -> Result<TreeEnsemble, Unsupported> {
        if model.has_functions {
            return refuse("the model declares functions");
        }
        let graph = &model.graph;
        if !graph.outputs.iter().any(|o| o.name == output) {
            return refuse(format!("no graph output '{output}'"));
        }
        // Walk back from the output through the nodes a rescorer file may put after the trees.
        let mut scale: Option<f32> = None;
        let mut name = output.to_string();
        let classifier = loop {
            let Some(node) = graph.nodes.iter().find(|n| n.outputs.contains(&name)) else {
                return refuse(format!("'{name}' is not computed by a node"));
            };
            let domain = node.domain.as_str();
            match (domain, node.op_type.as_str()) {
                ("" | "ai.onnx", "Identity") => name = node.inputs[0].clone(),
                ("" | "ai.onnx", "Mul") if node.inputs.len() == 2 => {
                    let constant = |n: &str| graph.initializers.iter().find(|t| t.name == n);
                    let (tensor, other) = match (constant(&node.inputs[0]), constant(&node.inputs[1])) {
                        (None, Some(t)) => (t, &node.inputs[0]),
                        (Some(t), None) => (t, &node.inputs[1]),
                        _ => return refuse("a Mul that is not by one constant"),
                    };
                    if tensor.data_type != crate::onnx::TENSOR_FLOAT
                        || tensor.floats.len() != 1
                        || tensor.dims.iter().any(|&d| d != 1)
                    {
                        return refuse(format!("a Mul by '{}', not a float scalar", tensor.name));
                    }
                    if graph.inputs.iter().any(|i| i.name == tensor.name) {
                        return refuse(format!(
                            "the Mul's '{}' is an input that may be overridden",
                            tensor.name
                        ));
                    }
                    if scale.is_some() {
                        return refuse("two Mul nodes after the trees");
                    }
                    scale = Some(tensor.floats[0]);
                    name = other.clone();
                }
                ("ai.onnx.ml", "TreeEnsembleClassifier") if node.outputs.get(1) == Some(&name) => break node,
                (domain, op) => {
                    let domain = if domain.is_empty() { "ai.onnx" } else { domain };
                    return refuse(format!("node {domain}.{op} between the trees and '{output}'"));
                }
            }
        };
        let ml_opset = model.opset("ai.onnx.ml").unwrap_or(0);
        if !(1..=3).contains(&ml_opset) {
            return refuse(format!("ai.onnx.ml opset {ml_opset}"));
        }
        let Some(input) = graph.inputs.iter().find(|i| Some(&i.name) == classifier.inputs.first()) else {
            return refuse("the trees do not read a graph input");
        };
        if input.element != crate::onnx::TENSOR_FLOAT {
            return refuse(format!("input '{}' is not float32", input.name));
        }
        if input.dims.len() != 2 {
            return refuse(format!("input '{}' is not [rows, features]", input.name));
        }
        let columns = input.dims[1].map(|d| d as usize);
        TreeEnsemble::from_classifier(classifier, columns, scale)
    }

    fn from_classifier(
        node: &Node<'_>,
        columns: Option<usize>,
        scale: Option<f32>,
    ) -> Result<TreeEnsemble, Unsupported> {
        for attribute in &node.attributes {
            if attribute.reference.is_some() {
                return refuse(format!("attribute {} refers to a function's", attribute.name));
            }
            if !KNOWN_ATTRIBUTES.contains(&attribute.name.as_str()) {
                return refuse(format!("attribute {}", attribute.name));
            }
        }
        let transform = node.attribute("post_transform").map(|a: &Attribute| a.s).unwrap_or(b"NONE");
        if transform != b"LOGISTIC" {
            return refuse(format!("post_transform {}", String::from_utf8_lossy(transform)));
        }
        if let Some(attribute) = node.attribute("classlabels_int64s") {
            if attribute.kind != AttributeType::Ints && attribute.kind != AttributeType::Undefined {
                return refuse("classlabels_int64s is not a list of ints");
            }
        }
        let labels = ints(node, "classlabels_int64s");
        if labels.len() != 2 {
            return refuse(format!("{} int64 class labels (two are run here)", labels.len()));
        }
        let tree_ids = ints(node, "nodes_treeids");
        let node_ids = ints(node, "nodes_nodeids");
        let features = ints(node, "nodes_featureids");
        let thresholds = floats(node, "nodes_values");
        let true_ids = ints(node, "nodes_truenodeids");
        let false_ids = ints(node, "nodes_falsenodeids");
        let missing = ints(node, "nodes_missing_value_tracks_true");
        let modes: Vec<Mode> = node
            .attribute("nodes_modes")
            .map(|a| a.strings.iter().map(|s| Mode::parse(s)).collect::<Result<_, _>>())
            .transpose()?
            .unwrap_or_default();
        let n = tree_ids.len();
        if n == 0 {
            return refuse("no nodes");
        }
        for (name, len) in [
            ("nodes_nodeids", node_ids.len()),
            ("nodes_featureids", features.len()),
            ("nodes_values", thresholds.len()),
            ("nodes_truenodeids", true_ids.len()),
            ("nodes_falsenodeids", false_ids.len()),
            ("nodes_modes", modes.len()),
        ] {
            if len != n {
                return refuse(format!("{len} {name} for {n} nodes"));
            }
        }
        if missing.len() > n {
            return refuse(format!("{} nodes_missing_value_tracks_true for {n} nodes", missing.len()));
        }
        let class_ids = ints(node, "class_ids");
        let class_nodes = ints(node, "class_nodeids");
        let class_trees = ints(node, "class_treeids");
        let weights = floats(node, "class_weights");
        if class_nodes.len() != class_ids.len()
            || class_trees.len() != class_ids.len()
            || weights.len() != class_ids.len()
        {
            return refuse("class_ids, class_nodeids, class_treeids and class_weights differ in length");
        }
        if class_ids.iter().any(|&c| c != 0) {
            return refuse("weights for class ids other than 0 (only the binary case is run here)");
        }
        if !weights.iter().any(|&w| w < 0.0) {
            return refuse("no negative weight (ONNX Runtime then reads scores as probabilities)");
        }

        // Trees: a new tree starts where the tree id changes (ONNX Runtime's roots); each tree's
        // nodes must be contiguous, as a tree id seen again would start a second root.
        let index = NodeIndex::new(tree_ids, node_ids)?;
        let roots = &index.roots;
        let mut values = vec![0f32; n];
        let mut weight_count = vec![0u32; n];
        for k in 0..class_ids.len() {
            let Some(i) = index.get(class_trees[k], class_nodes[k]) else {
                return refuse(format!(
                    "a weight for node {}-{} that does not exist",
                    class_trees[k], class_nodes[k]
                ));
            };
            if modes[i] != Mode::Leaf {
                continue; // ONNX Runtime ignores weights on branches (old onnxmltools wrote some)
            }
            weight_count[i] += 1;
            values[i] = weights[k];
        }
        let mut logical = Vec::with_capacity(n);
        let mut min_columns = 0usize;
        for i in 0..n {
            if modes[i] == Mode::Leaf {
                match weight_count[i] {
                    0 => return refuse(format!("leaf {}-{} has no weight", tree_ids[i], node_ids[i])),
                    1 => {}
                    // several weights of one class add up in float32 in ONNX Runtime too, but in
                    // the row's running sum, one after the other: not the same rounding
                    _ => return refuse(format!("leaf {}-{} has several weights", tree_ids[i], node_ids[i])),
                }
                logical.push(Logical::Leaf(values[i]));
                continue;
            }
            let child = |id: i64, which: &str| -> Result<usize, Unsupported> {
                if !(0..n as i64).contains(&id) {
                    // ONNX Runtime refuses the model then (a child id must be < the node count)
                    return refuse(format!(
                        "node {}-{}: {which} child id {id} out of range",
                        tree_ids[i], node_ids[i]
                    ));
                }
                match index.get(tree_ids[i], id) {
                    Some(j) if j != i => Ok(j),
                    Some(_) => {
                        refuse(format!("node {}-{} is its own {which} child", tree_ids[i], node_ids[i]))
                    }
                    None => refuse(format!("node {}-{}: no {which} child {id}", tree_ids[i], node_ids[i])),
                }
            };
            let (on_true, on_false) = (child(true_ids[i], "true")?, child(false_ids[i], "false")?);
            let feature = features[i];
            if !(0..MAX_FEATURES).contains(&feature) {
                return refuse(format!("feature index {feature}"));
            }
            min_columns = min_columns.max(feature as usize + 1);
            let feature = feature as u32;
            let nan_true = missing.get(i) == Some(&1);
            let t = thresholds[i];
            logical.push(match modes[i] {
                Mode::Leq => Logical::Leq { feature, threshold: t, nan_true, next: [on_true, on_false] },
                Mode::Lt => {
                    Logical::Leq { feature, threshold: below(t), nan_true, next: [on_true, on_false] }
                }
                // x > t is !(x <= t) but for NaN, which goes wherever the node says
                Mode::Gt => {
                    Logical::Leq { feature, threshold: t, nan_true: !nan_true, next: [on_false, on_true] }
                }
                Mode::Gte => Logical::Leq {
                    feature,
                    threshold: below(t),
                    nan_true: !nan_true,
                    next: [on_false, on_true],
                },
                Mode::Eq => Logical::Eq {
                    feature,
                    threshold: t,
                    nan_true,
                    next: [on_true, on_false],
                    set: folds_into_a_set(t),
                },
                // NaN != t holds: NaN takes the original true child, the swapped false one
                Mode::Neq => Logical::Eq {
                    feature,
                    threshold: t,
                    nan_true: false,
                    next: [on_false, on_true],
                    set: false,
                },
                Mode::Leaf => unreachable!(),
            });
        }
        if let Some(columns) = columns {
            if min_columns > columns {
                return refuse(format!(
                    "the trees read feature {} of a {columns}-wide input",
                    min_columns - 1
                ));
            }
        }
        let layout = Layout::new(&logical, roots, tree_ids)?;
        Ok(layout.into_ensemble(roots.len(), min_columns, columns, [labels[0], labels[1]], scale, n))
    }

    pub fn n_trees(&self) -> usize {
        self.trees
    }

    pub fn n_nodes(&self) -> usize {
        self.nodes
    }

    /// The input width the graph fixes, if it does.
    pub fn columns(&self) -> Option<usize> {
        self.columns
    }

    /// Per row of `features` (`rows` × `columns`, row-major): the raw score (sum of the trees),
    /// into `scores`.
    pub fn raw_scores(&self, features: &[f32], columns: usize, scores: &mut [f32]) -> Result<(), String> {
        let rows = scores.len();
        if features.len() != rows * columns {
            return Err(format!("{} feature values are not {rows} rows of {columns}", features.len()));
        }
        if let Some(expected) = self.columns {
            if columns != expected {
                return Err(format!("features have {columns} columns, the trees read {expected}"));
            }
        }
        if columns < self.min_columns {
            return Err(format!("the trees read feature {} of rows {columns} wide", self.min_columns - 1));
        }
        let mut bits = vec![Lanes([0; GROUP]); self.trees];
        let mut common = vec![0u64; self.trees];
        for (group, out) in scores.chunks_mut(GROUP).enumerate() {
            let first = group * GROUP;
            // past the end, lanes repeat the last row
            let rows: [&[f32]; GROUP] = std::array::from_fn(|k| {
                let r = first + k.min(out.len() - 1);
                &features[r * columns..(r + 1) * columns]
            });
            self.leaves(&rows, &mut bits, &mut common);
            self.sum_leaves(&bits, &common, out);
        }
        Ok(())
    }

    /// Evaluates with the widest SIMD this processor runs, or without (for tests: both must agree).
    pub fn with_simd(self, on: bool) -> TreeEnsemble {
        self.with_simd_level(if on { Simd::best() } else { Simd::Portable })
    }

    /// Evaluates with `simd`, or the widest this processor runs below it (for tests: every
    /// level must give the same bits).
    pub fn with_simd_level(mut self, simd: Simd) -> TreeEnsemble {
        self.simd =
            Simd::ALL.into_iter().rev().find(|s| *s <= simd && s.detected()).unwrap_or(Simd::Portable);
        self
    }

    /// The instructions it runs with.
    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// The rows' leaves: `bits[tree].0[k] & common[tree]` left with row k's leaf in that tree
    /// as its lowest bit (`common`: the leaves ruled out for every row of the group, by nodes
    /// whose test fails for all 16, kept once a tree rather than in each row's lane).
    fn leaves(&self, rows: &[&[f32]; GROUP], bits: &mut [Lanes], common: &mut [u64]) {
        // the same code, compiled for the instructions detected when the model was read
        #[cfg(target_arch = "x86_64")]
        match self.simd {
            Simd::Avx512 => return unsafe { self.leaves_avx512(rows, bits, common) },
            Simd::Avx2 => return unsafe { self.leaves_avx2(rows, bits, common) },
            Simd::Portable => {}
        }
        self.leaves_portable(rows, bits, common)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    unsafe fn leaves_avx512(&self, rows: &[&[f32]; GROUP], bits: &mut [Lanes], common: &mut [u64]) {
        self.leaves_with::<true>(rows, bits, common)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn leaves_avx2(&self, rows: &[&[f32]; GROUP], bits: &mut [Lanes], common: &mut [u64]) {
        self.leaves_portable(rows, bits, common)
    }

    /// `leaves`, written so that the compiler vectorises the 16 lanes (with AVX2 or AVX-512 when compiled
    /// for it): per feature the group's bins, then the entries of the bins between the least
    /// and the most, each applied to the lanes whose bin it holds for.
    #[inline(always)]
    fn leaves_portable(&self, rows: &[&[f32]; GROUP], bits: &mut [Lanes], common: &mut [u64]) {
        self.leaves_with::<false>(rows, bits, common)
    }

    /// `leaves_portable`; with `AVX512` (only inside `leaves_avx512`) the entries that apply
    /// to some rows are applied with AVX-512's compare-into-mask and masked and-not.
    #[inline(always)]
    fn leaves_with<const AVX512: bool>(
        &self,
        rows: &[&[f32]; GROUP],
        bits: &mut [Lanes],
        common: &mut [u64],
    ) {
        debug_assert!(rows.iter().all(|r| r.len() >= self.min_columns) && bits.len() == self.trees);
        bits.fill(Lanes([!0; GROUP]));
        common.fill(!0);
        let entries = self.tables.entries.as_slice();
        for feature in self.tables.features.iter() {
            // the group's values of the feature, read here rather than all gathered first (a
            // table of every feature's values would take L1 cache from the leaf bits); every
            // column read is below min_columns <= the rows' length
            let column = feature.column as usize;
            let xs: &[f32; GROUP] = &std::array::from_fn(|k| unsafe { *rows[k].get_unchecked(column) });
            let first = feature.points_first as usize;
            let count = feature.points_count as usize;
            let points = unsafe { self.tables.points.get_unchecked(first..first + count) };
            let slots = unsafe { self.tables.slots.get_unchecked(feature.slots_first as usize..) };
            let nan = xs.iter().fold(false, |nan, x| nan | x.is_nan());
            if nan {
                // rare: each row on its own, a NaN on the feature's NaN slot
                for (k, &x) in xs.iter().enumerate() {
                    let slot = if x.is_nan() { count + 1 } else { bin(points, x) };
                    let [a, b, c, d] = unsafe { *slots.get_unchecked(slot) };
                    unsafe {
                        apply_row(bits, entries.get_unchecked(a as usize..b as usize), k);
                        apply_row(bits, entries.get_unchecked(c as usize..d as usize), k);
                    }
                }
                continue;
            }
            // the bins, then the least and the most of them (not two searches for the least
            // and the most value's bins first, each a chain of dependent loads)
            let mut bins = [0i64; GROUP];
            if count <= LINEAR {
                // few points: count them all for every row at once
                let mut above = [0i32; GROUP];
                for &p in points {
                    for k in 0..GROUP {
                        above[k] += i32::from(p < xs[k]);
                    }
                }
                for k in 0..GROUP {
                    bins[k] = i64::from(above[k]);
                }
            } else {
                bins_of(points, xs, &mut bins);
            }
            let least = bins.iter().copied().min().unwrap_or(0) as usize;
            let most = bins.iter().copied().max().unwrap_or(0) as usize;
            // Up-to entries (by point) apply to rows whose bin is up to their point, above
            // entries to those whose bin is above: from the least bin's first up-to entry to
            // the most bin's last above entry, some rows apply each; those from the most
            // bin's first up-to entry to the least bin's last above entry, every row.
            let [least_up_to, least_above, _, _] = unsafe { *slots.get_unchecked(least) };
            let [most_up_to, most_above, _, _] = unsafe { *slots.get_unchecked(most) };
            #[cfg(target_arch = "x86_64")]
            if AVX512 {
                // SAFETY: called from leaves_avx512 only, on a processor with AVX-512
                unsafe {
                    let up_to = entries.get_unchecked(least_up_to as usize..most_up_to as usize);
                    apply_masked_avx512::<false>(bits, up_to, &bins);
                    let above = entries.get_unchecked(least_above as usize..most_above as usize);
                    apply_masked_avx512::<true>(bits, above, &bins);
                }
            }
            unsafe {
                for e in entries.get_unchecked(least_up_to as usize..most_up_to as usize) {
                    if AVX512 {
                        break;
                    }
                    let j = e.point as i64;
                    let lanes = &mut bits.get_unchecked_mut(e.tree as usize).0;
                    for k in 0..GROUP {
                        let on = 0u64.wrapping_sub(u64::from(bins[k] <= j));
                        lanes[k] &= !(e.leaves & on);
                    }
                }
                // every row: into the tree's leaves common to the group (8 bytes, not 128)
                for e in entries.get_unchecked(most_up_to as usize..least_above as usize) {
                    *common.get_unchecked_mut(e.tree as usize) &= !e.leaves;
                }
                for e in entries.get_unchecked(least_above as usize..most_above as usize) {
                    if AVX512 {
                        break;
                    }
                    let j = e.point as i64;
                    let lanes = &mut bits.get_unchecked_mut(e.tree as usize).0;
                    for k in 0..GROUP {
                        let on = 0u64.wrapping_sub(u64::from(bins[k] > j));
                        lanes[k] &= !(e.leaves & on);
                    }
                }
            }
            if feature.listed {
                for (k, &bin) in bins.iter().enumerate() {
                    let [_, _, c, d] = unsafe { *slots.get_unchecked(bin as usize) };
                    unsafe { apply_row(bits, entries.get_unchecked(c as usize..d as usize), k) };
                }
            }
        }
    }

    /// Each row's sum of its leaves' values, tree by tree in order, in float32 from 0 (ONNX
    /// Runtime's sum); `bits` and `common` hold the group's leaves (see `leaves`), `out` takes
    /// its first rows'.
    fn sum_leaves(&self, bits: &[Lanes], common: &[u64], out: &mut [f32]) {
        let mut sums = [0f32; GROUP];
        for (t, (Lanes(lanes), &common)) in bits.iter().zip(common).enumerate() {
            let values = &self.tables.leaf_values[t * MAX_LEAVES..(t + 1) * MAX_LEAVES];
            for k in 0..GROUP {
                sums[k] += values[(lanes[k] & common).trailing_zeros() as usize & (MAX_LEAVES - 1)];
            }
        }
        out.copy_from_slice(&sums[..out.len()]);
    }

    /// The `[rows, 2]` probabilities and the labels ONNX Runtime's classifier gives `features`.
    pub fn predict(
        &self,
        features: &[f32],
        columns: usize,
        probabilities: &mut [f32],
        labels: Option<&mut [i64]>,
    ) -> Result<(), String> {
        let rows = probabilities.len() / 2;
        if probabilities.len() != rows * 2 {
            return Err("probabilities take two values a row".to_string());
        }
        let mut scores = vec![0f32; rows];
        self.raw_scores(features, columns, &mut scores)?;
        for (pair, &s) in probabilities.chunks_exact_mut(2).zip(&scores) {
            let (p0, p1) = (logistic(-s), logistic(s));
            match self.scale {
                Some(c) => {
                    pair[0] = p0 * c;
                    pair[1] = p1 * c;
                }
                None => {
                    pair[0] = p0;
                    pair[1] = p1;
                }
            }
        }
        if let Some(labels) = labels {
            if labels.len() != rows {
                return Err(format!("{} labels for {rows} rows", labels.len()));
            }
            for (label, &s) in labels.iter_mut().zip(&scores) {
                *label = if s > 0.0 { self.labels[1] } else { self.labels[0] };
            }
        }
        Ok(())
    }
}

/// Where each node of the lists is, by (tree id, node id), and each tree's first node (ONNX
/// Runtime's roots: a new tree starts where the tree id changes). Where the trees carry the ids
/// 0, 1, 2 … in order and each tree's nodes the ids 0, 1, 2 … in order (as onnxmltools writes
/// LightGBM's), a node's place is its tree's root plus its id, with no map: hashing the ids of a
/// rescorer's hundred thousand nodes was an eighth of opening the engine.
struct NodeIndex {
    roots: Vec<usize>,
    /// None: the ids are dense, as above
    map: Option<std::collections::HashMap<(i64, i64), usize>>,
    nodes: usize,
}

impl NodeIndex {
    /// Refuses what ONNX Runtime would read otherwise: a tree whose nodes are not contiguous (a
    /// tree id seen again would start a second root), a node id twice in a tree.
    fn new(tree_ids: &[i64], node_ids: &[i64]) -> Result<NodeIndex, Unsupported> {
        let n = tree_ids.len();
        let starts = |i: usize| i == 0 || tree_ids[i] != tree_ids[i - 1];
        // dense: tree t's root has the id t, and each node the id of its place in its tree
        let mut roots: Vec<usize> = Vec::new();
        let dense = (0..n).all(|i| {
            if starts(i) {
                roots.push(i);
            }
            let root = *roots.last().unwrap_or(&0);
            tree_ids[i] == (roots.len() - 1) as i64 && node_ids[i] == (i - root) as i64
        });
        if dense {
            return Ok(NodeIndex { roots, map: None, nodes: n });
        }
        let mut map = std::collections::HashMap::with_capacity(n);
        roots.clear();
        let mut seen_trees = std::collections::HashSet::new();
        for i in 0..n {
            if starts(i) {
                if !seen_trees.insert(tree_ids[i]) {
                    return refuse(format!("the nodes of tree {} are not contiguous", tree_ids[i]));
                }
                roots.push(i);
            }
            if map.insert((tree_ids[i], node_ids[i]), i).is_some() {
                return refuse(format!("node {} of tree {} is there twice", node_ids[i], tree_ids[i]));
            }
        }
        Ok(NodeIndex { roots, map: Some(map), nodes: n })
    }

    /// The place of node `node` of tree `tree`, if there is one.
    #[inline]
    fn get(&self, tree: i64, node: i64) -> Option<usize> {
        match &self.map {
            Some(map) => map.get(&(tree, node)).copied(),
            None => {
                let t = usize::try_from(tree).ok()?;
                let root = *self.roots.get(t)?;
                let end = self.roots.get(t + 1).copied().unwrap_or(self.nodes);
                let k = usize::try_from(node).ok()?;
                (k < end - root).then_some(root + k)
            }
        }
    }
}

/// A node once its comparison is normalised: `x <= t` or `x == t`, `nan_true` sending NaN to
/// `next[0]`, indices into the ONNX node lists. `set`: a `BRANCH_EQ` whose category ONNX
/// Runtime folds into a set with the `BRANCH_EQ`s after it (see `Layout`).
#[derive(Clone, Copy, Debug)]
enum Logical {
    Leaf(f32),
    Leq { feature: u32, threshold: f32, nan_true: bool, next: [usize; 2] },
    Eq { feature: u32, threshold: f32, nan_true: bool, next: [usize; 2], set: bool },
}

/// ONNX Runtime (1.2x-1.3x) folds a `BRANCH_EQ` whose value is a whole number from 1 to 32 with
/// the `BRANCH_EQ`s it reaches by its false child on the same feature, with the same true child
/// and such values, into one set-membership node (a 32-bit mask), which sends NaN where the
/// first node of the run says (the others' `nodes_missing_value_tracks_true` are then unread).
fn folds_into_a_set(threshold: f32) -> bool {
    (1.0..=32.0).contains(&threshold) && threshold.fract() == 0.0
}

/// The count of `points` (ascending, no NaN) below `x` (not NaN): the bin of `x`, so that
/// `x <= points[j]` is `bin <= j`. Branch-free (the comparison becomes a conditional move).
#[inline(always)]
fn bin(points: &[f32], x: f32) -> usize {
    let mut size = points.len();
    if size == 0 {
        return 0;
    }
    let mut base = 0usize;
    while size > 1 {
        let half = size / 2;
        // the points before base are all below x, those from base + size on are not; a
        // conditional move, not a branch (which the values make unpredictable)
        let below = unsafe { *points.get_unchecked(base + half) } < x;
        base += std::hint::select_unpredictable(below, half, 0);
        size -= half;
    }
    base + usize::from(unsafe { *points.get_unchecked(base) } < x)
}

/// `bin(points, x)` for each of a group's values, into `bins`: the 16 searches side by side,
/// step by step (their steps have the same sizes), so that they overlap instead of each
/// waiting on its own loads.
#[inline(always)]
fn bins_of(points: &[f32], xs: &[f32; GROUP], bins: &mut [i64; GROUP]) {
    let mut base = [0usize; GROUP];
    let mut size = points.len();
    if size == 0 {
        *bins = [0; GROUP];
        return;
    }
    while size > 1 {
        let half = size / 2;
        for k in 0..GROUP {
            // as in `bin`: every point before base[k] is below xs[k]
            let below = unsafe { *points.get_unchecked(base[k] + half) } < xs[k];
            base[k] += std::hint::select_unpredictable(below, half, 0);
        }
        size -= half;
    }
    for k in 0..GROUP {
        let below = unsafe { *points.get_unchecked(base[k]) } < xs[k];
        bins[k] = (base[k] + usize::from(below)) as i64;
    }
}

/// A tree's node once the `==` chains of a categorical split are one node; `next` are places
/// in `Forest::nodes`.
#[derive(Clone, Copy, Debug)]
enum Unfolded {
    Leaf(f32),
    /// NaN goes to `next[0]` when `nan_true`; numbers when `test` holds. `feature`: the column
    /// as unfolded, its place among the features split on once `Layout::new` has numbered them
    Split {
        feature: u32,
        test: Test,
        nan_true: bool,
        next: [usize; 2],
    },
}

#[derive(Clone, Copy, Debug)]
enum Test {
    /// `x <= t` (t not NaN)
    AtMost(f32),
    /// `x` is one of `Forest::values[first..first + len]` (ascending, no NaN; none: never)
    OneOf { first: u32, len: u32 },
}

/// Every tree unfolded (see `Layout`), in one list: tree k's nodes are
/// `nodes[starts[k]..starts[k + 1]]`, pre-order (its root first); the categorical nodes' values
/// are runs of `values`.
struct Forest {
    nodes: Vec<Unfolded>,
    starts: Vec<usize>,
    values: Vec<f32>,
}

/// Which bins of its feature a node's test rules leaves out for, and whether NaN does.
#[derive(Clone, Copy, Debug)]
enum Bins {
    /// the bins above j (`x > points[j]`)
    Above(usize),
    /// the bins up to j (`x <= points[j]`)
    UpTo(usize),
    /// the bins of these values (`x` one of `Forest::values[first..first + len]`)
    Each { first: u32, len: u32 },
}

/// One node's rule: when the row's bin of `feature` is in `bins` (or it is NaN and `nan`),
/// the leaves `entry` names are not the row's.
struct Rule {
    /// the feature's place among those split on (`Layout::new`'s `split_features`)
    feature: u32,
    bins: Bins,
    nan: bool,
    entry: Entry,
}

/// The evaluation's tables, built from the logical nodes.
///
/// Every tree is first *unfolded* into a binary tree: a chain of `x == c1`, else `x == c2`, …
/// on one feature with one true child T (LightGBM's "category in set", one `BRANCH_EQ` per
/// category, which ONNX Runtime folds into set nodes, see `folds_into_a_set`) becomes one node
/// "x is one of c1, c2, …" whose NaN goes to T when any link of the chain would send it
/// there before it leaves the chain; a node several parents share is copied for each. A tree
/// left with more than 64 leaves is refused.
///
/// Each node then picks its *left* child, the one whose leaves come first: the child a row
/// usually takes, so that few rows have to clear bits for it (QuickScorer clears the leaves
/// under the left child of every node whose test sends the row right). Without data to count
/// on, "usually" is a guess: a `<=` node whose threshold is in the upper half of its feature's
/// thresholds keeps its true child left (few values are above it), one in the lower half its
/// false child; a categorical node its false child (a row is one category of many). The
/// choice changes which entries a row applies, never its leaf.
///
/// Per feature, its *points* are its `<=` thresholds and, for each category c, c and
/// `below(c)`; a value's bin is the count of points below it. A `<=` node on the j-th point
/// rules its left leaves out for the bins above j (true child left) or up to j (false child
/// left): laid out as `[up-to nodes by j][above nodes by j]`, the nodes a bin b rules with
/// are one run, from the first up-to node with j >= b to the last above node with j < b. A
/// categorical node is listed under each of its bins; NaN has a list of its own. Nodes of one
/// j, or of one bin, keep the order of their trees and, in a tree, of their leaves.
///
/// It is built with a few sorts of packed integer keys over flat lists (no list per feature,
/// bin or node): the default model's two fast stages (65k nodes) are read at every engine
/// open.
#[derive(Clone, Debug)]
struct Layout {
    /// the features the trees read, by column
    features: Vec<Feature>,
    /// every feature's split points, ascending (no NaN, one zero)
    points: Vec<f32>,
    /// per feature and bin (and NaN): `[a, b, c, d]`, the entries a row of that bin applies
    /// are `a..b` (its `<=` nodes') and `c..d` (its categorical nodes', or NaN's)
    slots: Vec<[u32; 4]>,
    entries: Vec<Entry>,
    /// per tree, 64 leaf values (leaf i at `tree * 64 + i`, in the layout's leaf order)
    leaf_values: Vec<f32>,
}

/// A float's place in `f32::total_cmp`'s order, as an unsigned integer (the same order).
fn order_key(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    }
}

/// The float `order_key` was made from.
fn from_order_key(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 { key & !(1 << 31) } else { !key })
}

impl Layout {
    /// The ensemble evaluated with these tables (`trees` of them, `nodes` nodes as read), with
    /// what the model says of its input and output; the widest SIMD this processor has.
    fn into_ensemble(
        self,
        trees: usize,
        min_columns: usize,
        columns: Option<usize>,
        labels: [i64; 2],
        scale: Option<f32>,
        nodes: usize,
    ) -> TreeEnsemble {
        TreeEnsemble { tables: self, simd: Simd::best(), trees, min_columns, columns, labels, scale, nodes }
    }

    fn new(logical: &[Logical], roots: &[usize], tree_ids: &[i64]) -> Result<Layout, Unsupported> {
        if roots.len() > MAX_TREES {
            return refuse(format!("{} trees (at most {MAX_TREES} are run here)", roots.len()));
        }
        let mut forest = Forest {
            nodes: Vec::with_capacity(logical.len()),
            starts: Vec::with_capacity(roots.len() + 1),
            values: Vec::new(),
        };
        for &root in roots {
            forest.starts.push(forest.nodes.len());
            let mut splits = 0;
            match unfold(logical, root, &mut forest, &mut splits) {
                Ok(_) => {}
                Err(Unsupported(why)) if why.is_empty() => {
                    return refuse(format!(
                        "tree {} has more than {MAX_LEAVES} leaves (or its nodes make a cycle)",
                        tree_ids[root]
                    ))
                }
                Err(e) => return Err(e),
            }
        }
        forest.starts.push(forest.nodes.len());
        let trees = roots.len();

        // the features split on, ascending (a feature's tables are at its place among them),
        // and each split's feature replaced by its place
        let mut split_features: Vec<u32> = forest
            .nodes
            .iter()
            .filter_map(|node| match node {
                Unfolded::Split { feature, .. } => Some(*feature),
                Unfolded::Leaf(_) => None,
            })
            .collect();
        let n_splits = split_features.len();
        if n_splits > u32::MAX as usize {
            return refuse("too many nodes");
        }
        let widest = split_features.iter().max().map_or(0, |&f| f as usize + 1);
        if widest <= DENSE_FEATURES {
            // a place per column, u32::MAX for those not split on
            let mut place = vec![u32::MAX; widest];
            for &f in &split_features {
                place[f as usize] = 0;
            }
            split_features.clear();
            for (column, place) in place.iter_mut().enumerate() {
                if *place == 0 {
                    *place = split_features.len() as u32;
                    split_features.push(column as u32);
                }
            }
            for node in &mut forest.nodes {
                if let Unfolded::Split { feature, .. } = node {
                    *feature = place[*feature as usize];
                }
            }
        } else {
            split_features.sort_unstable();
            split_features.dedup();
            for node in &mut forest.nodes {
                if let Unfolded::Split { feature, .. } = node {
                    *feature = split_features.binary_search(feature).unwrap_or_default() as u32;
                }
            }
        }

        // every feature's points, and the middle of its thresholds (the left children's guess):
        // per feature (a counting sort by place), its points as (order key << 1 | 0 for a
        // threshold, 1 for a category's) sorted
        let n_features = split_features.len();
        let mut key_starts = vec![0usize; n_features + 1];
        for node in &forest.nodes {
            match *node {
                Unfolded::Split { feature, test: Test::AtMost(_), .. } => {
                    key_starts[feature as usize + 1] += 1
                }
                Unfolded::Split { feature, test: Test::OneOf { first, len }, .. } => {
                    let values = &forest.values[first as usize..][..len as usize];
                    let below = values.iter().filter(|&&c| c != f32::NEG_INFINITY).count();
                    key_starts[feature as usize + 1] += values.len() + below;
                }
                Unfolded::Leaf(_) => {}
            }
        }
        for f in 0..n_features {
            key_starts[f + 1] += key_starts[f];
        }
        let mut keys = vec![0u64; key_starts[n_features]];
        let mut fill = key_starts.clone();
        for node in &forest.nodes {
            if let Unfolded::Split { feature, test, .. } = *node {
                let at = &mut fill[feature as usize];
                let mut push = |x: f32, category: bool| {
                    keys[*at] = u64::from(order_key(x)) << 1 | u64::from(category);
                    *at += 1;
                };
                match test {
                    Test::AtMost(t) => push(t, false),
                    Test::OneOf { first, len } => {
                        for &c in &forest.values[first as usize..][..len as usize] {
                            push(c, true);
                            if c != f32::NEG_INFINITY {
                                push(below(c), true);
                            }
                        }
                    }
                }
            }
        }
        // per feature: its points `points[first[f]..first[f + 1]]` (equal points are one, the
        // first in total_cmp's order: -0 before 0), the middle of its distinct thresholds
        let mut points: Vec<f32> = Vec::with_capacity(keys.len());
        let mut first = Vec::with_capacity(n_features + 1);
        let mut middles = Vec::with_capacity(n_features);
        let mut thresholds: Vec<f32> = Vec::new();
        for place in 0..n_features {
            let start = points.len();
            first.push(start);
            thresholds.clear();
            let these = &mut keys[key_starts[place]..key_starts[place + 1]];
            these.sort_unstable();
            for &key in these.iter() {
                let value = from_order_key((key >> 1) as u32);
                let is_threshold = key & 1 == 0;
                if points.len() > start && points[points.len() - 1] == value {
                    // the same point: a threshold if any of its copies is one
                    if is_threshold && thresholds.last().is_none_or(|&t| t != value) {
                        thresholds.push(value);
                    }
                } else {
                    points.push(value);
                    if is_threshold {
                        thresholds.push(value);
                    }
                }
            }
            middles.push(thresholds.get(thresholds.len() / 2).copied().unwrap_or(0.0));
        }
        first.push(points.len());
        drop(keys);
        let index = |place: usize, value: f32| -> usize {
            points[first[place]..first[place + 1]].partition_point(|&p| p < value)
            // value is one of them
        };

        // leaf order and each node's rule
        let mut rules = Vec::with_capacity(n_splits);
        let mut leaf_values = vec![0f32; trees * MAX_LEAVES];
        let left_true = |node: &Unfolded| match node {
            Unfolded::Split { feature, test: Test::AtMost(t), .. } => *t >= middles[*feature as usize],
            _ => false,
        };
        let mut ordered =
            Ordered { splits: Vec::with_capacity(MAX_LEAVES), leaves: Vec::with_capacity(MAX_LEAVES) };
        for tree in 0..trees {
            ordered.splits.clear();
            ordered.leaves.clear();
            order(&forest.nodes, forest.starts[tree], &left_true, &mut ordered);
            leaf_values[tree * MAX_LEAVES..][..ordered.leaves.len()].copy_from_slice(&ordered.leaves);
            for &(node, left_true, lo, hi) in &ordered.splits {
                let Unfolded::Split { feature, test, nan_true, .. } = forest.nodes[node] else {
                    unreachable!()
                };
                let bins = match test {
                    Test::AtMost(t) if left_true => Bins::Above(index(feature as usize, t)),
                    Test::AtMost(t) => Bins::UpTo(index(feature as usize, t)),
                    Test::OneOf { first, len } => Bins::Each { first, len },
                };
                // NaN rules the left leaves out when it goes to the other child
                let nan = nan_true != left_true;
                rules.push(Rule { feature, bins, nan, entry: Entry::new(tree, lo, hi) });
            }
        }

        // the rules by feature, in their order (a counting sort)
        let mut starts = vec![0usize; n_features + 1];
        for rule in &rules {
            starts[rule.feature as usize + 1] += 1;
        }
        for f in 0..n_features {
            starts[f + 1] += starts[f];
        }
        let mut by_feature = vec![0u32; rules.len()];
        let mut fill = starts.clone();
        for (k, rule) in rules.iter().enumerate() {
            let at = &mut fill[rule.feature as usize];
            by_feature[*at] = k as u32;
            *at += 1;
        }

        // per feature: entries and slots. A list of nodes by j (or by bin) is a sort of
        // (j << 32 | the rule's index): by j, then in the rules' order.
        let mut features = Vec::with_capacity(split_features.len());
        let mut slots = Vec::with_capacity(points.len() + 2 * split_features.len());
        let mut entries: Vec<Entry> = Vec::with_capacity(rules.len());
        let (mut up_to, mut above, mut each) = (Vec::<u64>::new(), Vec::<u64>::new(), Vec::<u64>::new());
        for (place, &feature) in split_features.iter().enumerate() {
            let count = first[place + 1] - first[place];
            up_to.clear();
            above.clear();
            each.clear(); // bins, then NaN as bin count + 1
            for &k in &by_feature[starts[place]..starts[place + 1]] {
                let rule = &rules[k as usize];
                let k = u64::from(k);
                match rule.bins {
                    Bins::UpTo(j) => up_to.push((j as u64) << 32 | k),
                    Bins::Above(j) => above.push((j as u64) << 32 | k),
                    Bins::Each { first, len } => {
                        for &c in &forest.values[first as usize..][..len as usize] {
                            each.push((index(place, c) as u64) << 32 | k);
                        }
                    }
                }
                if rule.nan {
                    each.push(((count + 1) as u64) << 32 | k);
                }
            }
            up_to.sort_unstable();
            above.sort_unstable();
            each.sort_unstable();
            let j_of = |key: u64| (key >> 32) as usize;
            let entry_of = |key: u64| Entry { point: (key >> 32) as u32, ..rules[key as u32 as usize].entry };
            let base = entries.len();
            entries.extend(up_to.iter().chain(&above).map(|&key| entry_of(key)));
            let listed = each.first().is_some_and(|&key| j_of(key) <= count);
            let slots_first = slots.len();
            // bin b's run: from the first up-to node with j >= b to the last above node with
            // j < b (both move right as b grows); its categorical nodes' run after them
            let (mut from, mut to, mut at) = (0, 0, 0);
            for b in 0..=count + 1 {
                let run = if b <= count {
                    while from < up_to.len() && j_of(up_to[from]) < b {
                        from += 1;
                    }
                    while to < above.len() && j_of(above[to]) < b {
                        to += 1;
                    }
                    [(base + from) as u32, (base + up_to.len() + to) as u32]
                } else {
                    [base as u32, base as u32] // NaN: none of them
                };
                let c = entries.len();
                while at < each.len() && j_of(each[at]) == b {
                    entries.push(Entry { point: 0, ..rules[each[at] as u32 as usize].entry });
                    at += 1;
                }
                slots.push([run[0], run[1], c as u32, entries.len() as u32]);
            }
            if entries.len() > u32::MAX as usize || first[place] + count > u32::MAX as usize {
                return refuse("too many nodes");
            }
            features.push(Feature {
                column: feature,
                points_first: first[place] as u32,
                points_count: count as u32,
                slots_first: slots_first as u32,
                listed,
            });
        }
        Ok(Layout { features, points, slots, entries, leaf_values })
    }
}

/// One unfolded tree in leaf order: per split (node, true child left, its left leaves
/// `lo..hi`), and the leaves' values in order.
struct Ordered {
    splits: Vec<(usize, bool, usize, usize)>,
    leaves: Vec<f32>,
}

/// Numbers the leaves under `at`, left child first (`left_true`: the true child is left).
fn order(nodes: &[Unfolded], at: usize, left_true: &impl Fn(&Unfolded) -> bool, out: &mut Ordered) {
    match &nodes[at] {
        Unfolded::Leaf(value) => out.leaves.push(*value),
        node @ Unfolded::Split { next, .. } => {
            let true_left = left_true(node);
            let (left, right) = if true_left { (next[0], next[1]) } else { (next[1], next[0]) };
            let lo = out.leaves.len();
            order(nodes, left, left_true, out);
            out.splits.push((at, true_left, lo, out.leaves.len()));
            order(nodes, right, left_true, out);
        }
    }
}

/// Copies the tree under logical node `i` into `forest`, pre-order (its root first), each chain
/// of `==` nodes with one true child merged into one node (see `Layout`); its place there.
/// `Unsupported("")` past `MAX_LEAVES` leaves (a cycle never ends otherwise).
fn unfold(
    logical: &[Logical],
    i: usize,
    forest: &mut Forest,
    splits: &mut usize,
) -> Result<usize, Unsupported> {
    let at = forest.nodes.len();
    let (feature, test, nan_true, next) = match logical[i] {
        Logical::Leaf(value) => {
            forest.nodes.push(Unfolded::Leaf(value));
            return Ok(at);
        }
        Logical::Leq { feature, threshold, nan_true, next } => {
            // x <= NaN holds for no x
            let test = if threshold.is_nan() {
                Test::OneOf { first: forest.values.len() as u32, len: 0 }
            } else {
                Test::AtMost(threshold)
            };
            (feature, test, nan_true, next)
        }
        Logical::Eq { feature, next: [on_true, _], .. } => {
            let values = &mut forest.values;
            let first = values.len();
            let (mut nan_true, mut on_false) = eq_run(logical, i, values)?;
            // the runs after it on the same feature and true child: x in any, NaN to the true
            // child if any run on the way sends it there
            let mut runs = 0;
            while let Logical::Eq { feature: f, next: [t, _], .. } = logical[on_false] {
                if f != feature || t != on_true {
                    break;
                }
                let (nan, after) = eq_run(logical, on_false, values)?;
                nan_true |= nan;
                on_false = after;
                runs += 1;
                if runs > logical.len() {
                    return refuse("the nodes make a cycle");
                }
            }
            // x == NaN holds for no x; -0 and 0 are one value for ==
            let mut kept = first;
            for k in first..values.len() {
                if !values[k].is_nan() {
                    values[kept] = values[k];
                    kept += 1;
                }
            }
            values.truncate(kept);
            values[first..].sort_by(f32::total_cmp);
            let mut kept = first;
            for k in first..values.len() {
                if kept == first || values[k] != values[kept - 1] {
                    values[kept] = values[k];
                    kept += 1;
                }
            }
            values.truncate(kept);
            if values.len() > u32::MAX as usize {
                return refuse("too many nodes");
            }
            let test = Test::OneOf { first: first as u32, len: (kept - first) as u32 };
            (feature, test, nan_true, [on_true, on_false])
        }
    };
    *splits += 1;
    if *splits >= MAX_LEAVES {
        return Err(Unsupported(String::new()));
    }
    forest.nodes.push(Unfolded::Split { feature, test, nan_true, next: [0, 0] });
    let on_true = unfold(logical, next[0], forest, splits)?;
    let on_false = unfold(logical, next[1], forest, splits)?;
    if let Unfolded::Split { next, .. } = &mut forest.nodes[at] {
        *next = [on_true, on_false];
    }
    Ok(at)
}

/// The run of `==` nodes from `i` that ONNX Runtime folds into one set node (`i` alone when
/// its value does not fold, see `folds_into_a_set`): its values (appended to `values`),
/// whether it sends NaN to its true child (as `i` says), its false child.
fn eq_run(logical: &[Logical], i: usize, values: &mut Vec<f32>) -> Result<(bool, usize), Unsupported> {
    let Logical::Eq { feature, threshold, nan_true, next: [on_true, mut on_false], set } = logical[i] else {
        unreachable!("eq_run on an == node")
    };
    values.push(threshold);
    if !set {
        return Ok((nan_true, on_false));
    }
    let mut count = 1;
    while let Logical::Eq { feature: f, threshold: t, next: [tt, ff], set: true, .. } = logical[on_false] {
        if f != feature || tt != on_true {
            break;
        }
        values.push(t);
        on_false = ff;
        count += 1;
        if count > logical.len() {
            return refuse("the nodes make a cycle");
        }
    }
    Ok((nan_true, on_false))
}

/// ONNX Runtime's `ComputeLogistic`, in float32.
#[inline]
pub fn logistic(v: f32) -> f32 {
    let e = 1.0f32 / (1.0f32 + (-v.abs()).exp());
    if v < 0.0 {
        1.0 - e
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (std only).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick(&mut self, values: &[f32]) -> f32 {
            values[self.below(values.len())]
        }
    }

    /// Values rows and thresholds draw from: signed zeros, infinities, NaN, whole categories
    /// (some that ONNX Runtime folds into sets, some not), fractions, neighbouring floats.
    const VALUES: [f32; 16] = [
        f32::NAN,
        f32::NEG_INFINITY,
        f32::INFINITY,
        0.0,
        -0.0,
        1.0,
        2.0,
        3.0,
        7.0,
        32.0,
        33.0,
        2.5,
        -1.5,
        1e-45,
        0.99999994,
        1.0000001,
    ];

    /// ONNX Runtime's walk over the logical nodes, written apart from the layout: `x <= t`
    /// (NaN as flagged), and a `==` node that folds (`folds_into_a_set`) tested together with
    /// the folding ones after it on its false side (same feature, same true child), NaN
    /// where it says.
    fn walk(logical: &[Logical], mut at: usize, row: &[f32]) -> f32 {
        loop {
            at = match logical[at] {
                Logical::Leaf(value) => return value,
                Logical::Leq { feature, threshold, nan_true, next } => {
                    let x = row[feature as usize];
                    next[usize::from(!(x <= threshold || (x.is_nan() && nan_true)))]
                }
                Logical::Eq { feature, threshold, nan_true, next, set } => {
                    let x = row[feature as usize];
                    let mut members = vec![threshold];
                    let mut after = next[1];
                    if set {
                        loop {
                            match logical[after] {
                                Logical::Eq { feature: f, threshold: t, next: n, set: true, .. }
                                    if f == feature && n[0] == next[0] =>
                                {
                                    members.push(t);
                                    after = n[1];
                                }
                                _ => break,
                            }
                        }
                    }
                    if x.is_nan() {
                        if nan_true {
                            next[0]
                        } else {
                            after
                        }
                    } else if members.contains(&x) {
                        next[0]
                    } else {
                        after
                    }
                }
            }
        }
    }

    /// A random tree of at most `leaves` leaves appended to `logical`: `<=` splits and
    /// categorical chains (`==` links sharing one true child); its root's index.
    fn random_tree(rng: &mut Rng, logical: &mut Vec<Logical>, leaves: usize, features: u32) -> usize {
        let at = logical.len();
        if leaves <= 1 || rng.below(5) == 0 {
            logical.push(Logical::Leaf((rng.below(2001) as f32 - 1000.0) / 256.0));
            return at;
        }
        let feature = rng.below(features as usize) as u32;
        let left = 1 + rng.below(leaves - 1);
        if rng.below(3) == 0 {
            // a chain: k links, then the true subtree, then the false one
            let k = 1 + rng.below(4);
            for i in 0..k {
                let threshold = if rng.below(2) == 0 { rng.below(40) as f32 } else { rng.pick(&VALUES) };
                let nan_true = rng.below(2) == 0;
                logical.push(Logical::Eq {
                    feature,
                    threshold,
                    nan_true,
                    next: [0, at + i + 1],
                    set: folds_into_a_set(threshold),
                });
            }
            let on_true = random_tree(rng, logical, left, features);
            let on_false = random_tree(rng, logical, leaves - left, features);
            for i in 0..k {
                if let Logical::Eq { next, .. } = &mut logical[at + i] {
                    next[0] = on_true;
                    if i == k - 1 {
                        next[1] = on_false;
                    }
                }
            }
            // the last link's false child was a placeholder until now
            return at;
        }
        logical.push(Logical::Leq {
            feature,
            threshold: rng.pick(&VALUES),
            nan_true: rng.below(2) == 0,
            next: [0, 0],
        });
        let on_true = random_tree(rng, logical, left, features);
        let on_false = random_tree(rng, logical, leaves - left, features);
        logical[at] = match logical[at] {
            Logical::Leq { feature, threshold, nan_true, .. } => {
                Logical::Leq { feature, threshold, nan_true, next: [on_true, on_false] }
            }
            _ => unreachable!(),
        };
        at
    }

    fn ensemble(logical: &[Logical], roots: &[usize], features: usize) -> TreeEnsemble {
        let layout = Layout::new(logical, roots, &vec![0; logical.len()]).unwrap();
        layout.into_ensemble(roots.len(), features, Some(features), [0, 1], None, logical.len())
    }

    #[test]
    fn both_evaluations_sum_the_leaves_onnx_runtime_walks_to() {
        let mut rng = Rng(0x9e3779b97f4a7c15);
        // features binned each way: their points counted at once, or searched (see LINEAR)
        let (mut counted, mut searched) = (0, 0);
        for round in 0..20 {
            let features = 1 + rng.below(6);
            let mut logical = Vec::new();
            let roots: Vec<usize> = (0..1 + rng.below(40))
                .map(|_| random_tree(&mut rng, &mut logical, 64, features as u32))
                .collect();
            let trees = ensemble(&logical, &roots, features);
            for feature in &trees.tables.features {
                *if feature.points_count as usize <= LINEAR { &mut counted } else { &mut searched } += 1;
            }
            // rows: more than a group, a number that is no multiple of it; NaN in some
            let n = 1 + rng.below(70);
            let mut rows = Vec::with_capacity(n * features);
            for _ in 0..n * features {
                rows.push(if rng.below(3) == 0 { rng.below(40) as f32 } else { rng.pick(&VALUES) });
            }
            let expected: Vec<f32> = rows
                .chunks_exact(features)
                .map(|row| roots.iter().fold(0f32, |sum, &root| sum + walk(&logical, root, row)))
                .collect();
            // every level this processor runs (`simd()` says which ran): the same bits
            for simd in Simd::ALL {
                let trees = trees.clone().with_simd_level(simd);
                assert!(trees.simd() <= simd && trees.simd().detected());
                let mut scores = vec![0f32; n];
                trees.raw_scores(&rows, features, &mut scores).unwrap();
                for (i, (s, e)) in scores.iter().zip(&expected).enumerate() {
                    let ran = trees.simd();
                    assert_eq!(s.to_bits(), e.to_bits(), "round {round} row {i} {ran:?}: {s} vs {e}");
                }
            }
        }
        assert!(counted > 0 && searched > 0, "{counted} features counted, {searched} searched");
    }

    #[test]
    fn trees_of_one_leaf_each_are_their_sum() {
        // no split anywhere: no feature, no point, no entry
        let logical = [Logical::Leaf(-2.0), Logical::Leaf(3.0), Logical::Leaf(0.25)];
        let trees = ensemble(&logical, &[0, 1, 2], 1);
        assert!(trees.tables.features.is_empty() && trees.tables.entries.is_empty());
        let mut scores = [0f32; 3];
        trees.raw_scores(&[0.0, f32::NAN, -1.0], 1, &mut scores).unwrap();
        assert_eq!(scores, [1.25; 3]);
    }

    #[test]
    fn wide_inputs_get_the_tables_of_narrow_ones() {
        // features numbered by a sort past DENSE_FEATURES columns, by a table below: the same
        // tables but for the columns
        let mut rng = Rng(0x51_7cc1_b727_220a);
        for _ in 0..10 {
            let mut logical = Vec::new();
            let roots: Vec<usize> =
                (0..1 + rng.below(30)).map(|_| random_tree(&mut rng, &mut logical, 64, 6)).collect();
            let wide_column = |f: u32| f * 40_000 + 3; // up to 200,003
            let wide: Vec<Logical> = logical
                .iter()
                .map(|node| match *node {
                    Logical::Leaf(v) => Logical::Leaf(v),
                    Logical::Leq { feature, threshold, nan_true, next } => {
                        Logical::Leq { feature: wide_column(feature), threshold, nan_true, next }
                    }
                    Logical::Eq { feature, threshold, nan_true, next, set } => {
                        Logical::Eq { feature: wide_column(feature), threshold, nan_true, next, set }
                    }
                })
                .collect();
            let ids = vec![0; logical.len()];
            let (narrow, wide) =
                (Layout::new(&logical, &roots, &ids).unwrap(), Layout::new(&wide, &roots, &ids).unwrap());
            let columns = |layout: &Layout| layout.features.iter().map(|f| f.column).collect::<Vec<_>>();
            assert!(columns(&wide).iter().any(|&c| c as usize > DENSE_FEATURES));
            assert_eq!(columns(&wide), columns(&narrow).into_iter().map(wide_column).collect::<Vec<_>>());
            let shape = |layout: &Layout| {
                let features: Vec<_> = layout
                    .features
                    .iter()
                    .map(|f| (f.points_first, f.points_count, f.slots_first, f.listed))
                    .collect();
                let entries: Vec<_> = layout.entries.iter().map(|e| (e.leaves, e.tree, e.point)).collect();
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                (features, bits(&layout.points), layout.slots.clone(), entries, bits(&layout.leaf_values))
            };
            assert_eq!(shape(&wide), shape(&narrow));
        }
    }

    #[test]
    fn a_tree_of_65_leaves_is_refused_64_run() {
        // a chain of splits: n splits, n + 1 leaves
        let chain = |splits: usize| {
            let mut logical = Vec::new();
            for i in 0..splits {
                logical.push(Logical::Leq {
                    feature: 0,
                    threshold: i as f32,
                    nan_true: false,
                    next: [2 * i + 1, 2 * i + 2],
                });
                logical.push(Logical::Leaf(i as f32));
            }
            logical.push(Logical::Leaf(-1.0));
            // node i's children: its leaf right after it, the next split after that
            for i in 0..splits {
                logical[2 * i] = Logical::Leq {
                    feature: 0,
                    threshold: i as f32,
                    nan_true: false,
                    next: [2 * i + 1, 2 * i + 2],
                };
            }
            logical
        };
        let ok = chain(63);
        let trees = ensemble(&ok, &[0], 1);
        let mut scores = [0f32; 2];
        trees.raw_scores(&[62.5, 100.0], 1, &mut scores).unwrap();
        assert_eq!(scores, [-1.0, -1.0]);
        trees.raw_scores(&[-3.0, 10.0], 1, &mut scores).unwrap();
        assert_eq!(scores, [0.0, 10.0]);
        let refused = Layout::new(&chain(64), &[0], &[7; 129]).err().unwrap();
        assert_eq!(refused.0, "tree 7 has more than 64 leaves (or its nodes make a cycle)");
    }

    #[test]
    fn a_bin_counts_the_points_below() {
        let points = [f32::NEG_INFINITY, -1.5, below(0.0), 0.0, 1.0, 2.5, 7.0, f32::MAX, f32::INFINITY];
        for n in 0..=points.len() {
            let points = &points[..n];
            for x in VALUES.iter().chain(&points.to_vec()).filter(|x| !x.is_nan()) {
                assert_eq!(bin(points, *x), points.iter().filter(|&&p| p < *x).count(), "{x} in {points:?}");
            }
        }
    }

    #[test]
    fn a_groups_bins_are_each_values_bin() {
        // bins_of's 16 searches side by side against bin's one, on every length up to 80
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for n in 0..=80 {
            let mut points: Vec<f32> = (0..n).map(|_| rng.below(200) as f32 / 4.0 - 10.0).collect();
            points.sort_by(f32::total_cmp);
            points.dedup();
            for _ in 0..2 {
                let xs: [f32; GROUP] = std::array::from_fn(|k| match k {
                    0 => f32::NEG_INFINITY,
                    1 => f32::INFINITY,
                    2 => points.first().copied().unwrap_or(0.0),
                    3 => points.last().copied().unwrap_or(0.0),
                    _ => rng.below(240) as f32 / 4.0 - 15.0,
                });
                let mut bins = [0i64; GROUP];
                bins_of(&points, &xs, &mut bins);
                for k in 0..GROUP {
                    assert_eq!(bins[k], bin(&points, xs[k]) as i64, "{} in {points:?}", xs[k]);
                }
            }
        }
    }

    #[test]
    fn below_is_the_next_float_down() {
        assert_eq!(below(1.0), 1.0f32 - f32::EPSILON / 2.0);
        assert_eq!(below(-1.0), -1.0f32 - f32::EPSILON);
        assert!(below(0.0) < 0.0 && below(-0.0) < -0.0);
        assert!(-0.0f32 > below(0.0) && 0.0f32 > below(0.0));
        assert!(below(f32::NEG_INFINITY).is_nan());
        assert_eq!(below(f32::INFINITY), f32::MAX);
        for t in [3.5f32, -2.25, 1e-40, -1e-40, f32::MIN_POSITIVE] {
            for x in [t, below(t), -t, 0.0, f32::INFINITY, f32::NEG_INFINITY] {
                assert_eq!(x < t, x <= below(t), "x {x} t {t}");
            }
        }
    }

    #[test]
    fn logistic_is_symmetric_as_onnx_runtime_computes_it() {
        assert_eq!(logistic(0.0), 0.5);
        let v = 1.0f32 / (1.0 + (-2.0f32).exp());
        assert_eq!(logistic(2.0), v);
        assert_eq!(logistic(-2.0), 1.0 - v);
        assert!(logistic(f32::NAN).is_nan());
    }
}

/// `cargo test -p pulpie_rt_kernels --release simd_levels -- --ignored --nocapture`: each SIMD
/// level this processor runs on the default model's two fast stages, rows whose values sit on
/// the trees' own split points, in alternating rounds; the best round's time per level and
/// the ratios, the same scores asserted (a measurement, never a gate).
#[cfg(test)]
mod simd_levels {
    use super::*;

    #[test]
    #[ignore]
    fn simd_levels() {
        for file in ["rescorer-fast-first.onnx", "rescorer-fast.onnx"] {
            let path = format!("{}/../pulpie_rt/default_model/{file}", env!("CARGO_MANIFEST_DIR"));
            let trees = TreeEnsemble::from_onnx(&std::fs::read(path).unwrap(), "probabilities").unwrap();
            let columns = trees.min_columns;
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let n = 4096;
            let mut rows = vec![0f32; n * columns];
            for r in 0..n {
                for f in &trees.tables.features {
                    let (first, count) = (f.points_first as usize, f.points_count as usize);
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let value = match count {
                        0 => 0.0,
                        _ => trees.tables.points[first + state as usize % count] + 1e-3,
                    };
                    rows[r * columns + f.column as usize] = value;
                }
            }
            let levels: Vec<Simd> = Simd::ALL.into_iter().filter(|s| s.detected()).collect();
            let mut best = vec![f64::INFINITY; levels.len()];
            let mut expected: Option<Vec<f32>> = None;
            for round in 0..6 {
                for k in 0..levels.len() {
                    let k = (k + round) % levels.len();
                    let t = trees.clone().with_simd_level(levels[k]);
                    let mut scores = vec![0f32; n];
                    let start = std::time::Instant::now();
                    t.raw_scores(&rows, columns, &mut scores).unwrap();
                    best[k] = best[k].min(start.elapsed().as_secs_f64());
                    let bits: Vec<u32> = scores.iter().map(|s| s.to_bits()).collect();
                    let first = expected.get_or_insert_with(|| scores.clone());
                    assert_eq!(bits, first.iter().map(|s| s.to_bits()).collect::<Vec<_>>());
                }
            }
            for (level, seconds) in levels.iter().zip(&best) {
                let ratio = best[0] / seconds;
                println!("{file}: {level:?} {:.1} ms for {n} rows, {ratio:.2}x portable", seconds * 1e3);
            }
        }
    }

    /// What opening the default model's `fast` profile costs the kernel: its two stages read
    /// and laid out, once (`ROUNDS=N`: N times), for instruction counts (a measurement):
    /// `valgrind --tool=callgrind target/release/deps/pulpie_rt_kernels-<hash> --ignored --exact
    /// trees::simd_levels::open_the_fast_stages` (`cargo test -p pulpie_rt_kernels --release
    /// --no-run` names the executable).
    #[test]
    #[ignore]
    fn open_the_fast_stages() {
        let dir = format!("{}/../pulpie_rt/default_model", env!("CARGO_MANIFEST_DIR"));
        let files = ["rescorer-fast-first.onnx", "rescorer-fast.onnx"];
        let bytes: Vec<Vec<u8>> =
            files.iter().map(|file| std::fs::read(format!("{dir}/{file}")).unwrap()).collect();
        let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
        for _ in 0..rounds {
            for bytes in &bytes {
                std::hint::black_box(TreeEnsemble::from_onnx(bytes, "probabilities").unwrap());
            }
        }
    }

    /// `PULPIE_RT_TREE_ROWS=FILE cargo test -p pulpie_rt_kernels --release tree_pages --
    /// --ignored --nocapture`: the default model's two fast stages on real pages' rows
    /// (`python -m bench.tree_rows FILE` writes them: per page and stage, `u32` rows, `u32`
    /// columns, the float32 rows), page by page as the core calls them, in rounds; the best
    /// round's CPU milliseconds (this thread's) per stage and a digest of every score's bits (a measurement).
    #[test]
    #[ignore]
    fn tree_pages() {
        let Ok(path) = std::env::var("PULPIE_RT_TREE_ROWS") else {
            println!("PULPIE_RT_TREE_ROWS is not set: nothing measured");
            return;
        };
        let bytes = std::fs::read(path).unwrap();
        let mut stages: [Vec<(usize, Vec<f32>)>; 2] = [Vec::new(), Vec::new()];
        let mut at = 0;
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        while at < bytes.len() {
            for stage in &mut stages {
                let (rows, columns) = (word(at), word(at + 4));
                at += 8;
                let values = bytes[at..at + rows * columns * 4]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect();
                at += rows * columns * 4;
                stage.push((columns, values));
            }
        }
        let files = ["rescorer-fast-first.onnx", "rescorer-fast.onnx"];
        for (file, pages) in files.iter().zip(&stages) {
            let path = format!("{}/../pulpie_rt/default_model/{file}", env!("CARGO_MANIFEST_DIR"));
            let trees = TreeEnsemble::from_onnx(&std::fs::read(path).unwrap(), "probabilities").unwrap();
            let rows: usize = pages.iter().map(|(columns, values)| values.len() / columns).sum();
            let mut best = f64::INFINITY;
            let mut digest = 0u64;
            for _ in 0..7 {
                digest = 0xcbf2_9ce4_8422_2325;
                let start = crate::clock::thread_cpu_seconds();
                for (columns, values) in pages {
                    let mut probabilities = vec![0f32; values.len() / columns * 2];
                    trees.predict(values, *columns, &mut probabilities, None).unwrap();
                    for p in &probabilities {
                        digest = (digest ^ u64::from(p.to_bits())).wrapping_mul(0x100_0000_01b3);
                    }
                }
                best = best.min(crate::clock::thread_cpu_seconds() - start);
            }
            let simd = trees.simd();
            println!(
                "{file}: {simd:?} {:.2} ms for {} pages, {rows} rows; digest {digest:016x}",
                best * 1e3,
                pages.len()
            );
        }
    }
}
