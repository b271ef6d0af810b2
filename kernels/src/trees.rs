//! A binary tree-ensemble classifier read from an ONNX `ai.onnx.ml` `TreeEnsembleClassifier`
//! (as onnxmltools writes LightGBM models) and evaluated to the bit as ONNX Runtime's CPU
//! kernel does, with a layout made for speed.
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
//! string labels, double thresholds) is refused with the reason, and the caller runs ONNX
//! Runtime instead.
//!
//! The layout: every node of every tree in one array of 16-byte steps (threshold, feature with
//! a flag bit, true and false child), every comparison made `x <= t` (`<`, `>=`, `>` with the
//! threshold moved to the next float below and the children swapped; chains of `==`, one per
//! category of a categorical split, as a balanced search over the categories, see `Layout`),
//! leaves made self-loops holding their value. A tree is then walked
//! for a group of rows at once, each row one independent chain of `depth` steps with no branch
//! (the child index is computed from the comparison), so the processor overlaps the rows'
//! memory loads instead of waiting on one row and mispredicting its turns; trees are taken one
//! at a time over a block of rows that stays in cache.

use crate::onnx::{Attribute, AttributeType, Model, Node};

/// Rows walked through one tree together (independent dependency chains).
const GROUP: usize = 8;
/// Rows whose running sums are kept while every tree is taken in turn (small enough that
/// their features stay in the L1 cache).
const BLOCK: usize = 16;

/// The widest input read (feature indices stay below it).
const MAX_FEATURES: i64 = 1 << 30;

/// One node as the walk reads it: 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Step {
    threshold: f32,
    /// the feature column
    feature: u32,
    /// `[true child, false child]`, absolute indices; a leaf points to itself twice
    next: [u32; 2],
}

impl Step {
    /// The child for `x`: `next[0]` when `x <= threshold`, or when `x` is NaN and NaN goes
    /// to the true child here (`nan_true`).
    #[inline(always)]
    fn child(&self, x: f32, nan_true: bool) -> u32 {
        let holds = x <= self.threshold;
        self.next[usize::from(!(holds | (nan_true & x.is_nan())))]
    }

    /// The child for a number (not NaN): one comparison.
    #[inline(always)]
    fn child_of_number(&self, x: f32) -> u32 {
        self.next[usize::from(!(x <= self.threshold))]
    }
}

/// The trees of a binary classifier, laid out for evaluation.
#[derive(Clone, Debug)]
pub struct TreeEnsemble {
    steps: Vec<Step>,
    /// per step: NaN goes to its true child (`nodes_missing_value_tracks_true`), read only for
    /// blocks of rows holding a NaN
    nan_true: Vec<bool>,
    /// per tree: the root's index and the most steps from the root to a leaf
    trees: Vec<(u32, u32)>,
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

fn ints<'a>(node: &'a Node, name: &str) -> &'a [i64] {
    node.attribute(name).map(|a| a.ints.as_slice()).unwrap_or(&[])
}

fn floats<'a>(node: &'a Node, name: &str) -> &'a [f32] {
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

    pub fn from_model(model: &Model, output: &str) -> Result<TreeEnsemble, Unsupported> {
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
            let Some(node) = graph.nodes.iter().find(|n| n.outputs.iter().any(|o| *o == name)) else {
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
        node: &Node,
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
        let transform =
            node.attribute("post_transform").map(|a: &Attribute| a.s.as_slice()).unwrap_or(b"NONE");
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
        let mut index: std::collections::HashMap<(i64, i64), usize> =
            std::collections::HashMap::with_capacity(n);
        let mut roots: Vec<usize> = Vec::new();
        let mut seen_trees = std::collections::HashSet::new();
        for i in 0..n {
            if i == 0 || tree_ids[i] != tree_ids[i - 1] {
                if !seen_trees.insert(tree_ids[i]) {
                    return refuse(format!("the nodes of tree {} are not contiguous", tree_ids[i]));
                }
                roots.push(i);
            }
            if index.insert((tree_ids[i], node_ids[i]), i).is_some() {
                return refuse(format!("node {} of tree {} is there twice", node_ids[i], tree_ids[i]));
            }
        }
        let mut values = vec![0f32; n];
        let mut weight_count = vec![0u32; n];
        for k in 0..class_ids.len() {
            let Some(&i) = index.get(&(class_trees[k], class_nodes[k])) else {
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
                match index.get(&(tree_ids[i], id)) {
                    Some(&j) if j != i => Ok(j),
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
        let mut layout = Layout::new(&logical);
        let mut trees = Vec::with_capacity(roots.len());
        for &root in &roots {
            trees.push(layout.emit(root)?);
        }
        let (steps, nan_true) = (layout.steps, layout.nan_true);
        // The most steps from each root to a leaf; a cycle (not a tree) is refused.
        let mut depth = vec![u32::MAX; steps.len()]; // MAX: not yet known
        let trees = trees
            .into_iter()
            .map(|root| Ok((root, steps_to_leaves(&steps, root as usize, &mut depth)?)))
            .collect::<Result<Vec<_>, Unsupported>>()?;
        Ok(TreeEnsemble {
            steps,
            nan_true,
            trees,
            min_columns,
            columns,
            labels: [labels[0], labels[1]],
            scale,
            nodes: n,
        })
    }

    pub fn n_trees(&self) -> usize {
        self.trees.len()
    }

    pub fn n_nodes(&self) -> usize {
        self.nodes
    }

    /// Per tree, the most comparisons from its root to a leaf.
    pub fn depths(&self) -> Vec<u32> {
        self.trees.iter().map(|&(_, depth)| depth).collect()
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
        for (block, out) in scores.chunks_mut(BLOCK).enumerate() {
            let first = block * BLOCK;
            self.block_scores(&features[first * columns..(first + out.len()) * columns], columns, out);
        }
        Ok(())
    }

    /// Every tree, in order, over one block of rows: without a NaN in the block each step is
    /// one comparison.
    fn block_scores(&self, rows: &[f32], columns: usize, out: &mut [f32]) {
        if rows.iter().any(|x| x.is_nan()) {
            self.block_scores_with::<true>(rows, columns, out)
        } else {
            self.block_scores_with::<false>(rows, columns, out)
        }
    }

    #[inline(always)]
    fn block_scores_with<const NAN: bool>(&self, rows: &[f32], columns: usize, out: &mut [f32]) {
        out.fill(0.0);
        let steps = self.steps.as_slice();
        let nan_true = self.nan_true.as_slice();
        let n = out.len();
        debug_assert!(rows.len() == n * columns && columns >= self.min_columns);
        for &(root, depth) in &self.trees {
            let mut start = 0;
            while start < n {
                // a group of GROUP rows; past the block's end lanes repeat its last row
                let base: [*const f32; GROUP] =
                    std::array::from_fn(|k| rows[(start + k).min(n - 1) * columns..].as_ptr());
                let mut at = [root; GROUP];
                // two steps a turn, the check after the second only: a lane that did not move
                // then is on its leaf (a branch always moves), and a leaf stays put
                for _ in 0..depth.div_ceil(2) {
                    for k in 0..GROUP {
                        at[k] = unsafe { self.step::<NAN>(steps, nan_true, base[k], at[k]) };
                    }
                    let mut moved = 0u32;
                    for k in 0..GROUP {
                        let next = unsafe { self.step::<NAN>(steps, nan_true, base[k], at[k]) };
                        moved |= next ^ at[k];
                        at[k] = next;
                    }
                    if moved == 0 {
                        break; // every row of the group is at its leaf
                    }
                }
                for k in 0..GROUP.min(n - start) {
                    // a leaf keeps its value where a branch keeps its threshold
                    out[start + k] += steps[at[k] as usize].threshold;
                }
                start += GROUP;
            }
        }
    }

    /// One step of a lane: from step `at`, its row's child.
    ///
    /// # Safety
    /// `at` is a step index (roots and children all are, by construction), and `row` points at
    /// a row of at least `min_columns` values (every step's feature is below that).
    #[inline(always)]
    unsafe fn step<const NAN: bool>(
        &self,
        steps: &[Step],
        nan_true: &[bool],
        row: *const f32,
        at: u32,
    ) -> u32 {
        let step = steps.get_unchecked(at as usize);
        let x = *row.add(step.feature as usize);
        if NAN {
            step.child(x, *nan_true.get_unchecked(at as usize))
        } else {
            step.child_of_number(x)
        }
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

/// Lays the logical nodes out as `Step`s, each tree depth first from its root (a node reached
/// from several parents, as the chains of `==` nodes onnxmltools writes for a categorical split
/// share their true child, is laid out once).
///
/// A chain of `x == c1`, else `x == c2`, … on one feature with one true child T (LightGBM's
/// "category in set", one node per category) as ONNX Runtime folds it (`folds_into_a_set`)
/// becomes a balanced search of `<=` comparisons over the points `c_i` — `x == c` is
/// `below(c) < x <= c` — so a row takes about log2(2k) steps instead of up to k, every step the
/// same comparison. NaN, false for every `<=`, ends at the top interval (> the largest c), which
/// leads to the chain's false child; when the chain sends NaN to T, a first `x <= +inf` step
/// sends NaN there instead. A node inside a chain that other nodes also lead to is laid out
/// again from there, as ONNX Runtime folds from it too.
struct Layout<'a> {
    logical: &'a [Logical],
    placed: Vec<u32>,
    steps: Vec<Step>,
    nan_true: Vec<bool>,
}

const NOT_PLACED: u32 = u32::MAX;

impl<'a> Layout<'a> {
    fn new(logical: &'a [Logical]) -> Layout<'a> {
        Layout {
            logical,
            placed: vec![NOT_PLACED; logical.len()],
            steps: Vec::with_capacity(logical.len()),
            nan_true: Vec::with_capacity(logical.len()),
        }
    }

    fn push(&mut self, step: Step, nan_true: bool) -> u32 {
        self.steps.push(step);
        self.nan_true.push(nan_true);
        (self.steps.len() - 1) as u32
    }

    /// The index of node `i`'s first step, laying it (and what it leads to) out if needed.
    fn emit(&mut self, i: usize) -> Result<u32, Unsupported> {
        if self.placed[i] != NOT_PLACED {
            return Ok(self.placed[i]);
        }
        if self.steps.len() >= (u32::MAX - 1) as usize {
            return refuse("too many nodes");
        }
        match self.logical[i] {
            Logical::Leaf(value) => {
                let at = self.steps.len() as u32;
                // a leaf: both children itself, its value where a threshold would be
                let at = self.push(Step { threshold: value, feature: 0, next: [at, at] }, false);
                self.placed[i] = at;
                Ok(at)
            }
            Logical::Leq { feature, threshold, nan_true, next } => {
                let at = self.push(Step { threshold, feature, next: [0, 0] }, nan_true);
                self.placed[i] = at;
                let on_true = self.emit(next[0])?;
                let on_false = self.emit(next[1])?;
                self.steps[at as usize].next = [on_true, on_false];
                Ok(at)
            }
            Logical::Eq { feature, threshold, nan_true, next, set } => {
                // the chain from i: its categories, then its false child
                let on_true = next[0];
                let mut points = vec![threshold];
                let mut on_false = next[1];
                let mut steps = 0;
                while set {
                    match self.logical[on_false] {
                        Logical::Eq { feature: f, threshold: t, next: n, set: true, .. }
                            if f == feature && n[0] == on_true =>
                        {
                            points.push(t);
                            on_false = n[1];
                        }
                        _ => break,
                    }
                    steps += 1;
                    if steps > self.logical.len() {
                        return refuse("the nodes make a cycle");
                    }
                }
                // x == NaN never holds: such a point matches nothing
                points.retain(|p| !p.is_nan());
                points.sort_by(|a, b| a.partial_cmp(b).unwrap());
                points.dedup_by(|a, b| a == b); // -0 and 0 are one point for ==
                                                // boundaries: interval j is (b[j-1], b[j]]; odd j are the points themselves
                let bounds: Vec<f32> = points.iter().flat_map(|&c| [below(c), c]).collect();
                const TO_TRUE: u32 = u32::MAX - 1;
                const TO_FALSE: u32 = u32::MAX - 2;
                let first = self.steps.len() as u32;
                let guard = if nan_true {
                    // x <= +inf: every number on, NaN to T
                    Some(self.push(Step { threshold: f32::INFINITY, feature, next: [0, TO_TRUE] }, false))
                } else {
                    None
                };
                let search = self.search(feature, &bounds, 0, bounds.len(), TO_TRUE, TO_FALSE);
                if let Some(guard) = guard {
                    self.steps[guard as usize].next[0] = search;
                }
                let start = if guard.is_some() { first } else { search };
                let last = self.steps.len();
                if last == first as usize {
                    // no step of its own (no point but NaN): the node is its false child
                    self.placed[i] = NOT_PLACED;
                    let f = self.emit(on_false)?;
                    self.placed[i] = f;
                    return Ok(f);
                }
                self.placed[i] = start;
                let t = self.emit(on_true)?;
                let f = self.emit(on_false)?;
                for step in &mut self.steps[first as usize..last] {
                    for target in &mut step.next {
                        if *target == TO_TRUE {
                            *target = t;
                        } else if *target == TO_FALSE {
                            *target = f;
                        }
                    }
                }
                Ok(start)
            }
        }
    }

    /// Steps telling apart the intervals `lo..=hi` of `bounds` (interval j is
    /// `(bounds[j-1], bounds[j]]`, interval `bounds.len()` is above them all); odd intervals
    /// are the chain's points and lead to `on_true`, even ones to `on_false`. Returns the first.
    fn search(
        &mut self,
        feature: u32,
        bounds: &[f32],
        lo: usize,
        hi: usize,
        on_true: u32,
        on_false: u32,
    ) -> u32 {
        if lo == hi {
            return if lo % 2 == 1 { on_true } else { on_false };
        }
        let mid = (lo + hi) / 2; // x <= bounds[mid]: intervals lo..=mid
        let at = self.push(Step { threshold: bounds[mid], feature, next: [0, 0] }, false);
        let left = self.search(feature, bounds, lo, mid, on_true, on_false);
        let right = self.search(feature, bounds, mid + 1, hi, on_true, on_false);
        self.steps[at as usize].next = [left, right];
        at
    }
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

/// The most steps from `at` to a leaf (0 at a leaf), memoised in `depth`; an error on a cycle.
fn steps_to_leaves(steps: &[Step], root: usize, depth: &mut [u32]) -> Result<u32, Unsupported> {
    const VISITING: u32 = u32::MAX - 1;
    // iterative post-order: (node, children pushed)
    let mut stack = vec![(root, false)];
    while let Some((at, expanded)) = stack.pop() {
        if depth[at] != u32::MAX && depth[at] != VISITING {
            continue;
        }
        let step = steps[at];
        let leaf = step.next == [at as u32, at as u32];
        if leaf {
            depth[at] = 0;
            continue;
        }
        if expanded {
            let a = depth[step.next[0] as usize];
            let b = depth[step.next[1] as usize];
            depth[at] = 1 + a.max(b);
            continue;
        }
        if depth[at] == VISITING {
            return refuse("the nodes make a cycle");
        }
        depth[at] = VISITING;
        stack.push((at, true));
        for child in step.next {
            match depth[child as usize] {
                VISITING => return refuse("the nodes make a cycle"),
                u32::MAX => stack.push((child as usize, false)),
                _ => {}
            }
        }
    }
    Ok(depth[root])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_the_next_float_down() {
        assert_eq!(below(1.0), 1.0f32 - f32::EPSILON / 2.0);
        assert_eq!(below(-1.0), -1.0f32 - f32::EPSILON);
        assert!(below(0.0) < 0.0 && below(-0.0) < -0.0);
        assert!(!(-0.0f32 <= below(0.0)) && !(0.0f32 <= below(0.0)));
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
