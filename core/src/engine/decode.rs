//! The engine's SEP logits → one prediction per block → `{item_id: label}`, as
//! `runtime/stages/labels.py` and `pages.decide_blocks` do it: the argmax at each SEP for a
//! plain bundle; the margins, the bundle's rescorer, its `main_margin` threshold and
//! `keep_best_block` for a bundle that asks for them (the embedded default model).
//!
//! `decide_blocks` is the one implementation of that decoding: the engine calls it for every
//! door, and the tools that look inside a page (`runtime/flow/pages.py`'s `decide_blocks`:
//! training, parity, tests) call it through `pulpie_rt_decide_blocks` (`ffi.rs`).
//! `tests/spec/labels_spec.py` is its specification.

use crate::features::context::WORDS;
use crate::ort::BlockRescorer;

/// How a bundle turns SEP outputs into block predictions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decoding {
    /// decode by margins (`need_margins`: a threshold, `keep_best_block` or a rescorer);
    /// otherwise the argmax at each SEP, as the reference
    pub margins: bool,
    /// the bundle's `main_margin` (None: 0)
    pub main_margin: Option<f64>,
    pub keep_best_block: bool,
    /// the bundle's `decoding.selection` is `expected_f1` (`expected_f1_labels`): needs the
    /// block features (their `words` column)
    pub expected_f1: bool,
    /// the bundle's `decoding.container_prior` (`container_prior`): needs the block features'
    /// container columns (layouts `blocks-v3` to `blocks-v6`)
    pub container_prior: Option<ContainerPrior>,
    /// the bundle's `decoding.story_prior` (`story_prior`, before the container prior): needs
    /// the block features' container columns
    pub story_prior: Option<ContainerPrior>,
    /// the bundle's `decoding.short_story` (`story_prior`'s shifts on a page whose story is
    /// short): needs a story prior
    pub short_story: Option<ShortStory>,
    /// the bundle's `decoding.continue_story` (`continue_story`): needs the block features'
    /// container columns (layouts `blocks-v3` to `blocks-v6`)
    pub continue_story: bool,
}

/// How far `pulpie_rt_options.favor` moves the decision threshold, in score units (log-odds):
/// precision raises it, recall lowers it.
pub const FAVOR_SHIFT: f64 = 1.0;

/// The shift of the decision threshold `favor` (`PULPIE_RT_FAVOR_*`) names, or None for a
/// value that names none.
pub fn favor_shift(favor: i32) -> Option<f64> {
    use crate::abi::{PULPIE_RT_FAVOR_BALANCED, PULPIE_RT_FAVOR_PRECISION, PULPIE_RT_FAVOR_RECALL};
    match favor {
        PULPIE_RT_FAVOR_BALANCED => Some(0.0),
        PULPIE_RT_FAVOR_PRECISION => Some(FAVOR_SHIFT),
        PULPIE_RT_FAVOR_RECALL => Some(-FAVOR_SHIFT),
        _ => None,
    }
}

impl Decoding {
    /// This decoding with its threshold moved by `shift` (0: unchanged); a bundle decoded by
    /// the argmax at each SEP is decoded by margins (the argmax is the margin above 0).
    pub fn shifted(self, shift: f64) -> Decoding {
        if shift == 0.0 {
            return self;
        }
        Decoding { margins: true, main_margin: Some(self.main_margin.unwrap_or(0.0) + shift), ..self }
    }
}

/// `decoding.container_prior`: the blocks outside the page's dominant container (the
/// smallest container holding `share` of the page's expected main words) have their scores
/// lowered by `shift` before the selection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContainerPrior {
    pub share: f64,
    pub shift: f64,
}

/// `decoding.short_story`: on a page whose story is short (its container's prose expects
/// fewer than `words` main words), the story prior lowers the linked blocks outside the
/// story's container by `shift` (in place of the prior's own shift) and the prose blocks
/// outside it by `prose_shift`: a rail of teasers, each a linked headline and a line of
/// summary, outweighs a story of a few sentences in words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShortStory {
    pub words: f64,
    pub shift: f64,
    pub prose_shift: f64,
}

/// The message of a page decoded by expected F1 without block features.
pub const NO_WORDS: &str = "rescore: ValueError: decoding.selection expected_f1 needs the block features \
                            (their words), and the page has none";

/// The message of a page decoded with a container prior without the container columns.
pub const NO_CONTAINERS: &str = "rescore: ValueError: decoding.container_prior needs the block features' \
                                 container columns (layout blocks-v3 to blocks-v6)";

/// The message of a page decoded with a story prior without the container columns.
pub const NO_STORY_PRIOR_CONTAINERS: &str = "rescore: ValueError: decoding.story_prior needs the block \
                                             features' container columns (layout blocks-v3 to \
                                             blocks-v6)";

/// The message of a page decoded with `continue_story` without the container columns.
pub const NO_STORY_CONTAINERS: &str =
    "rescore: ValueError: decoding.continue_story needs the block features' \
                                       container columns (layout blocks-v3 to blocks-v6)";

/// A prose block for `continue_story`: at least this many words, under this share of them
/// in links.
pub const PROSE_WORDS: f32 = 10.0;
pub const PROSE_LINK_RATIO: f32 = 0.25;
/// `continue_story` passes over a block whose text the page holds this many times or more
/// (`repeats`, itself counted).
pub const STORY_COPIES: f32 = 3.0;

/// One chunk's outputs at its SEPs, in SEP order.
#[derive(Clone, Copy, Debug)]
pub enum SepOutputs<'a> {
    /// `[n_sep × labels]` logits, row-major
    Logits { values: &'a [f32], labels: usize },
    /// logit(main) − logit(other) per SEP (`labels.sep_margins` of the logits)
    Margins(&'a [f32]),
}

/// The message of a page decoded with a rescorer but without block features.
pub const NO_FEATURES: &str =
    "rescore: ValueError: the bundle has a rescorer but the page has no block features \
                               (prepared without Preparer.from_bundle?)";

/// A page's decision with what it was decided from: per block its prediction (1: main) and
/// its score (log-odds of main, after the rescorer and the priors; NaN: none, a block the
/// limits cut), and the threshold a score was compared with (`Decoding::main_margin`, the
/// favor's shift included; 0 for a bundle decoded by the argmax at each SEP, whose score is
/// the SEP's margin). A prediction is not always `score > threshold`: `keep_best_block`,
/// `expected_f1` and `continue_story` decide some blocks from the page around them.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    pub predictions: Vec<usize>,
    pub scores: Vec<f32>,
    pub threshold: f64,
}

/// A page's decoding: the argmax path, or `pages.decide_blocks` (margins →
/// per-block scores, the rescorer's scores over `features` when there is one, blocks past
/// `n_classified` "other", the threshold, `keep_best_block`), with the scores and the threshold
/// it decided from (the page inspector's figures: `pulpie_rt_result_score`). `features`:
/// `n_blocks` rows. An error is the page's `"rescore: …"`.
pub fn decide_blocks(
    n_blocks: usize,
    chunk_blocks: &[&[usize]],
    outputs: &[SepOutputs<'_>],
    decoding: &Decoding,
    rescorer: Option<&BlockRescorer>,
    features: Option<&[f32]>,
    n_classified: usize,
) -> Result<Decided, String> {
    let margins: Vec<Vec<f32>> = outputs
        .iter()
        .map(|output| match *output {
            SepOutputs::Logits { values, labels } => sep_margins(values, labels),
            SepOutputs::Margins(margins) => margins.to_vec(),
        })
        .collect();
    if !decoding.margins {
        let preds: Vec<Vec<usize>> = outputs
            .iter()
            .map(|output| match *output {
                SepOutputs::Logits { values, labels } => argmax_labels(values, labels),
                // a margin above 0 is the argmax of two logits (ties: "other", the first)
                SepOutputs::Margins(margins) => margins.iter().map(|&m| usize::from(m > 0.0)).collect(),
            })
            .collect();
        return Ok(Decided {
            predictions: block_predictions(n_blocks, chunk_blocks, &preds),
            scores: block_margins(n_blocks, chunk_blocks, &margins),
            threshold: 0.0,
        });
    }
    let mut scores = block_margins(n_blocks, chunk_blocks, &margins);
    if let Some(rescorer) = rescorer {
        let features = features.ok_or_else(|| NO_FEATURES.to_string())?;
        scores = rescorer
            .scores(features, n_blocks, &scores)
            .map_err(|e| format!("rescore: {}", super::py::describe("OrtError", &e.0)))?;
        // blocks the limits cut are "other", whatever the rescorer makes of their features
        for score in scores.iter_mut().skip(n_classified) {
            *score = f32::NAN;
        }
    }
    if let Some(prior) = decoding.story_prior {
        let features = features.ok_or_else(|| NO_STORY_PRIOR_CONTAINERS.to_string())?;
        story_prior(&mut scores, features, prior, decoding.short_story)
            .ok_or_else(|| NO_STORY_PRIOR_CONTAINERS.to_string())?;
    }
    if let Some(prior) = decoding.container_prior {
        let features = features.ok_or_else(|| NO_CONTAINERS.to_string())?;
        container_prior(&mut scores, features, prior).ok_or_else(|| NO_CONTAINERS.to_string())?;
    }
    let threshold = decoding.main_margin.unwrap_or(0.0);
    let predictions = if decoding.expected_f1 && n_blocks > 0 {
        let features = features.ok_or_else(|| NO_WORDS.to_string())?;
        let width = features.len() / n_blocks;
        if width <= WORDS {
            return Err(NO_WORDS.to_string());
        }
        let words: Vec<f32> = (0..n_blocks).map(|b| features[b * width + WORDS]).collect();
        expected_f1_labels(&scores, &words, threshold)
    } else {
        margin_labels(&scores, threshold)
    };
    let mut predictions =
        if decoding.keep_best_block { keep_best_block(predictions, &scores) } else { predictions };
    if decoding.continue_story {
        let features = features.ok_or_else(|| NO_STORY_CONTAINERS.to_string())?;
        continue_story(&mut predictions, &scores, features).ok_or_else(|| NO_STORY_CONTAINERS.to_string())?;
    }
    Ok(Decided { predictions, scores, threshold })
}

/// `labels.continue_story`: a story goes on to its end. Walking the prose blocks in page order
/// (`PROSE_WORDS` words or more, under `PROSE_LINK_RATIO` of them linked, not a caption:
/// `features::is_caption`, nor a text the page holds `STORY_COPIES` times or more; other blocks are
/// passed over), a block left other joins the story when the story's element is its parent or
/// grandparent (a list item under the story's body) and it has a score (NaN: cut by the page's
/// limits; such a block ends the story); a main block outside the story starts one under its own
/// parent; blocks elsewhere neither join nor end it. So every later prose block under the story's
/// element is main until a main prose block elsewhere starts another. The fast profile's scores
/// fall with a block's place on long pages (WCXB's references, which it is trained on, often stop
/// before a long article's end and leave its code blocks out), so the later paragraphs of a long
/// story, alike in every column but their place, fell under the cut. A caption is no paragraph of
/// the story: the hand-made references here leave photo captions out (of the `<figcaption>`s of six
/// words or more, WCXB's train pages 463 of 531, the modern news pages 526 of 527, Dragnet's 44 of
/// 44), and the model scores them low, but a story run on through its figures kept them all (issue
/// 46, docs/models-and-quality.md). Nor is a text the page holds `STORY_COPIES` times or more: a
/// placeholder left under each embed ("Deine Privatsphäre-Einstellungen verhindern das Laden …",
/// seven times on one held-apart news page) or a widget's line, which a story run on through the
/// embeds kept; a story seldom writes its own paragraph three times (a pull quote repeats one
/// once).
/// None when `features` (`labels.len()` rows) are not rows of a layout with container
/// columns.
pub fn continue_story(labels: &mut [usize], scores: &[f32], features: &[f32]) -> Option<()> {
    use crate::features::context::{LINK_RATIO, N_FEATURES_V2, REPEATS};
    use crate::features::is_caption;
    let n = labels.len();
    if n == 0 {
        return Some(());
    }
    let width = container_rows_width(features, n).filter(|_| scores.len() == n)?;
    let mut story: Option<f32> = None;
    for i in 0..n {
        let block = &features[i * width..(i + 1) * width];
        if block[WORDS] < PROSE_WORDS
            || block[LINK_RATIO] >= PROSE_LINK_RATIO
            || is_caption(block)
            || block[REPEATS] >= STORY_COPIES
        {
            continue;
        }
        let (parent, grandparent) = (block[N_FEATURES_V2], block[N_FEATURES_V2 + 1]);
        let under_story = story.is_some_and(|s| s == parent || s == grandparent);
        if labels[i] == 0 && under_story && !scores[i].is_nan() {
            labels[i] = 1;
        } else if labels[i] == 1 && !under_story {
            story = (parent >= 0.0).then_some(parent);
        } else if labels[i] == 0 && under_story {
            story = None;
        }
    }
    Some(())
}

/// The blocks whose selection maximises the page's expected word F1 when block `i` is main
/// with probability `p_i = sigmoid(score_i - threshold)` and holds `words[i]` words (the
/// score a word-F1 benchmark gives a page, rather than each block's own odds): with the
/// blocks ranked by `p`, the best selection is a prefix of the ranking, and the prefix of `k`
/// blocks has the expected F1 ≈ `2 Σ_{i≤k} p_i w_i / (Σ_{i≤k} w_i + Σ_all p_i w_i)` (the
/// ratio of expectations). So a short block beside a long main text needs high odds, while on
/// a page of uncertain blocks more are kept. Blocks without words, which change no count,
/// are main when `p > 0.5` (`score > threshold`, as `margin_labels`); NaN scores are other.
pub fn expected_f1_labels(scores: &[f32], words: &[f32], threshold: f64) -> Vec<usize> {
    let mut labels = margin_labels(scores, threshold);
    let p: Vec<f64> = scores
        .iter()
        .map(|&s| if s.is_nan() { 0.0 } else { 1.0 / (1.0 + (-(s as f64 - threshold)).exp()) })
        .collect();
    let w: Vec<f64> = words.iter().map(|&w| (w as f64).max(0.0)).collect();
    let mut ranked: Vec<usize> = (0..scores.len()).filter(|&i| w[i] > 0.0 && !scores[i].is_nan()).collect();
    // highest probability first; equal ones in page order (a stable sort)
    ranked.sort_by(|&a, &b| p[b].partial_cmp(&p[a]).unwrap_or(std::cmp::Ordering::Equal));
    let expected_main: f64 = ranked.iter().map(|&i| p[i] * w[i]).sum();
    let (mut hits, mut kept, mut best, mut best_k) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    for (k, &i) in ranked.iter().enumerate() {
        hits += p[i] * w[i];
        kept += w[i];
        let f1 = 2.0 * hits / (kept + expected_main);
        if f1 > best {
            (best, best_k) = (f1, k + 1);
        }
    }
    for (k, &i) in ranked.iter().enumerate() {
        labels[i] = usize::from(k < best_k);
    }
    labels
}

/// `labels.container_prior`: `scores` (one per block; NaN: none) lowered by `prior.shift`
/// outside the page's dominant container. Each block is main with probability
/// `p_i = sigmoid(score_i)` (0 for NaN) and its expected main words are `p_i × words_i`; a
/// container (an ancestor id of the block features' container columns, which hold each
/// block's first `N_CONTAINERS` ancestors) holds the expected main words of the blocks under
/// it. The dominant container is the one of fewest blocks (then lowest id) holding at least
/// `prior.share` of the page's; with none (or no expected main words) the scores stay. A page
/// whose main content sits in one article body then keeps less of the teasers, galleries and
/// feeds around it, which score like prose. None when `features` (`scores.len()` rows) are
/// not rows of a layout with container columns.
pub fn container_prior(scores: &mut [f32], features: &[f32], prior: ContainerPrior) -> Option<()> {
    let n = scores.len();
    if n == 0 {
        return Some(());
    }
    let width = container_rows_width(features, n)?;
    let Some(dominant) = dominant_container(scores, features, width, prior.share, |_| true) else {
        return Some(());
    };
    let shift = prior.shift as f32;
    for (i, score) in scores.iter_mut().enumerate() {
        if !in_container(features, width, i, dominant) {
            *score -= shift;
        }
    }
    Some(())
}

/// `labels.story_prior`: the story's container decided first, then what sits beside it.
/// The story's container is `container_prior`'s dominant container counting the expected
/// main words of prose blocks only (under `PROSE_LINK_RATIO` of their words in links): a
/// rail of ten linked headlines, which may expect more main words than a short story, counts
/// none. The linked blocks (`PROSE_LINK_RATIO` or more) outside it are lowered by
/// `prior.shift`; prose outside it is left to the container prior. With `short`, on a page
/// whose story's container expects fewer than `short.words` main prose words, the linked
/// blocks outside it are lowered by `short.shift` instead and the prose outside it by
/// `short.prose_shift`. None when `features` are not rows of a layout with container
/// columns.
pub fn story_prior(
    scores: &mut [f32],
    features: &[f32],
    prior: ContainerPrior,
    short: Option<ShortStory>,
) -> Option<()> {
    use crate::features::context::LINK_RATIO;
    let n = scores.len();
    if n == 0 {
        return Some(());
    }
    let width = container_rows_width(features, n)?;
    let linked = |i: usize| features[i * width + LINK_RATIO] >= PROSE_LINK_RATIO;
    let Some(story) = dominant_container(scores, features, width, prior.share, |i| !linked(i)) else {
        return Some(());
    };
    let short = short.filter(|short| {
        let story_words: f64 = (0..n)
            .filter(|&i| !linked(i) && in_container(features, width, i, story))
            .map(|i| expected_words(scores[i], features[i * width + WORDS]))
            .sum();
        story_words < short.words
    });
    let (linked_shift, prose_shift) = match short {
        Some(short) => (short.shift as f32, short.prose_shift as f32),
        None => (prior.shift as f32, 0.0),
    };
    for (i, score) in scores.iter_mut().enumerate() {
        if !in_container(features, width, i, story) {
            *score -= if linked(i) { linked_shift } else { prose_shift };
        }
    }
    Some(())
}

/// A block's expected main words: `sigmoid(score) × words` (0 for a NaN score).
fn expected_words(score: f32, words: f32) -> f64 {
    if score.is_nan() {
        return 0.0;
    }
    let p = 1.0 / (1.0 + (-(score as f64)).exp());
    p * (words as f64).max(0.0)
}

/// Whether block `i`'s container columns (rows `width` wide) hold container `id`.
fn in_container(features: &[f32], width: usize, i: usize, id: f32) -> bool {
    use crate::features::{context::N_FEATURES_V2, N_CONTAINERS};
    features[i * width + N_FEATURES_V2..i * width + N_FEATURES_V2 + N_CONTAINERS].contains(&id)
}

/// The container of fewest blocks (then lowest id) holding at least `share` of the page's
/// expected main words, counting block `i`'s (`sigmoid(score_i) × words_i`, 0 for NaN) where
/// `counts(i)`; None when none does or no word is expected.
fn dominant_container(
    scores: &[f32],
    features: &[f32],
    width: usize,
    share: f64,
    counts: impl Fn(usize) -> bool,
) -> Option<f32> {
    use crate::features::{context::N_FEATURES_V2, N_CONTAINERS};
    let row = |i: usize| &features[i * width..(i + 1) * width];
    let mass: Vec<f64> = (0..scores.len())
        .map(|i| if counts(i) { expected_words(scores[i], row(i)[WORDS]) } else { 0.0 })
        .collect();
    let total: f64 = mass.iter().sum();
    if total <= 0.0 {
        return None;
    }
    // container id (its float's bits) -> (expected main words, blocks under it)
    let mut containers: crate::hash::FastMap<u32, (f64, usize)> = Default::default();
    for (i, &block_mass) in mass.iter().enumerate() {
        for &id in &row(i)[N_FEATURES_V2..N_FEATURES_V2 + N_CONTAINERS] {
            if id >= 0.0 {
                let entry = containers.entry(id.to_bits()).or_insert((0.0, 0));
                entry.0 += block_mass;
                entry.1 += 1;
            }
        }
    }
    containers
        .iter()
        .filter(|(_, &(words, _))| words >= share * total)
        .min_by(|(a, &(_, na)), (b, &(_, nb))| {
            na.cmp(&nb).then(f32::from_bits(**a).total_cmp(&f32::from_bits(**b)))
        })
        .map(|(&id, _)| f32::from_bits(id))
}

/// The width of `features` read as `n` (> 0) rows of a layout with container columns
/// (`blocks-v3`, `blocks-v4`), or None when they are not such rows.
fn container_rows_width(features: &[f32], n: usize) -> Option<usize> {
    let width = features.len() / n;
    (crate::features::context::read_in_context(features, width) && features.len() == n * width)
        .then_some(width)
}

/// `labels.argmax_labels` of one chunk's `[n_sep × labels]` logits (first maximum on ties).
pub fn argmax_labels(sep_logits: &[f32], labels: usize) -> Vec<usize> {
    if labels == 0 {
        return Vec::new();
    }
    sep_logits
        .chunks_exact(labels)
        .map(|row| {
            let mut best = 0;
            for (index, &value) in row.iter().enumerate() {
                // NaN wins as in NumPy's argmax (the first NaN)
                if row[best].is_nan() {
                    break;
                }
                if value > row[best] || value.is_nan() {
                    best = index;
                }
            }
            best
        })
        .collect()
}

/// `labels.sep_margins`: logit(main) − logit(other) per SEP, in float32.
pub fn sep_margins(sep_logits: &[f32], labels: usize) -> Vec<f32> {
    if labels < 2 {
        return Vec::new();
    }
    sep_logits.chunks_exact(labels).map(|row| row[1] - row[0]).collect()
}

/// `labels.block_predictions`: per block the prediction of its chunk's SEP (0 where a chunk
/// ran short of SEPs).
pub fn block_predictions(
    n_blocks: usize,
    chunk_blocks: &[&[usize]],
    chunk_preds: &[Vec<usize>],
) -> Vec<usize> {
    let mut predictions = vec![0; n_blocks];
    for (blocks, preds) in chunk_blocks.iter().zip(chunk_preds) {
        for (&block, &pred) in blocks.iter().zip(preds) {
            predictions[block] = pred;
        }
    }
    predictions
}

/// `labels.block_margins`: per block the margin of its chunk's SEP (NaN where none).
pub fn block_margins(n_blocks: usize, chunk_blocks: &[&[usize]], chunk_margins: &[Vec<f32>]) -> Vec<f32> {
    let mut margins = vec![f32::NAN; n_blocks];
    for (blocks, values) in chunk_blocks.iter().zip(chunk_margins) {
        for (&block, &value) in blocks.iter().zip(values) {
            margins[block] = value;
        }
    }
    margins
}

/// `margin_labels(np.nan_to_num(scores, nan=-np.inf), threshold)`: 1 where the score is above
/// `threshold` (a Python float meeting a float32 array: compared as float32, NumPy ≥ 2).
pub fn margin_labels(scores: &[f32], threshold: f64) -> Vec<usize> {
    let threshold = threshold as f32;
    scores.iter().map(|&s| usize::from(!s.is_nan() && s > threshold)).collect()
}

/// `labels.keep_best_block`: with no block main, the block of the highest score (the first
/// of equals, NaN skipped) becomes main; a page without any score is left alone.
pub fn keep_best_block(mut predictions: Vec<usize>, scores: &[f32]) -> Vec<usize> {
    if predictions.contains(&1) {
        return predictions;
    }
    let mut best: Option<usize> = None;
    for (index, &score) in scores.iter().enumerate() {
        if score.is_nan() {
            continue;
        }
        if best.is_none_or(|b| score > scores[b]) {
            best = Some(index);
        }
    }
    if let Some(best) = best {
        predictions[best] = 1;
    }
    predictions
}

/// `labels.labels_from_predictions`: `(item_id, main?)` in the order of a Python dict built
/// block by block (a repeated id keeps its first position and takes the last block's label);
/// blocks without an id get no label.
pub fn labels_from_predictions(item_ids: &[Option<String>], predictions: &[usize]) -> Vec<(String, bool)> {
    labelled(item_ids, predictions).into_iter().map(|(id, pred)| (id, *pred == 1)).collect()
}

/// Per labelled block (`labels_from_predictions`' ids, in its order) the score of the block
/// whose label it took (the last block of a repeated id).
pub fn label_scores(item_ids: &[Option<String>], scores: &[f32]) -> Vec<f32> {
    labelled(item_ids, scores).into_iter().map(|(_, score)| *score).collect()
}

/// `(item_id, value)` per id in the order of a Python dict built block by block: a repeated
/// id keeps its first position and takes the last block's value; blocks without an id none.
fn labelled<'a, T>(item_ids: &[Option<String>], values: &'a [T]) -> Vec<(String, &'a T)> {
    let mut labels: Vec<(String, &T)> = Vec::with_capacity(item_ids.len());
    let mut position: std::collections::HashMap<&str, usize> = Default::default();
    for (id, value) in item_ids.iter().zip(values) {
        let Some(id) = id else { continue };
        match position.get(id.as_str()) {
            Some(&at) => labels[at].1 = value,
            None => {
                position.insert(id, labels.len());
                labels.push((id.clone(), value));
            }
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn favor_shifts_the_threshold_and_decodes_an_argmax_bundle_by_margins() {
        let plain = Decoding {
            margins: false,
            main_margin: None,
            keep_best_block: false,
            expected_f1: false,
            container_prior: None,
            story_prior: None,
            short_story: None,
            continue_story: false,
        };
        assert_eq!(plain.shifted(0.0), plain);
        let precise = plain.shifted(favor_shift(crate::abi::PULPIE_RT_FAVOR_PRECISION).unwrap());
        assert_eq!((precise.margins, precise.main_margin), (true, Some(1.0)));
        let bundle = Decoding { margins: true, main_margin: Some(0.25), ..plain };
        let recall = bundle.shifted(favor_shift(crate::abi::PULPIE_RT_FAVOR_RECALL).unwrap());
        assert_eq!(recall.main_margin, Some(-0.75));
        assert_eq!(favor_shift(crate::abi::PULPIE_RT_FAVOR_BALANCED), Some(0.0));
        assert_eq!(favor_shift(3), None);
    }

    #[test]
    fn a_decision_gives_the_scores_and_threshold_it_was_made_from() {
        let plain = Decoding {
            margins: false,
            main_margin: None,
            keep_best_block: false,
            expected_f1: false,
            container_prior: None,
            story_prior: None,
            short_story: None,
            continue_story: false,
        };
        // two chunks: blocks 0, 1 | 2; block 3 in no chunk (cut by the limits); logits
        // [other, main] per SEP: the score is the margin main - other
        let logits_a = [0.0f32, 2.0, 1.0, 0.5];
        let logits_b = [-1.0f32, 3.0];
        let outputs = [
            SepOutputs::Logits { values: &logits_a, labels: 2 },
            SepOutputs::Logits { values: &logits_b, labels: 2 },
        ];
        let blocks: [&[usize]; 2] = [&[0, 1], &[2]];
        let argmax = decide_blocks(4, &blocks, &outputs, &plain, None, None, 4).unwrap();
        assert_eq!(argmax.predictions, vec![1, 0, 1, 0]);
        assert_eq!(&argmax.scores[..3], &[2.0, -0.5, 4.0]);
        assert!(argmax.scores[3].is_nan());
        assert_eq!(argmax.threshold, 0.0);
        // a bundle's threshold, shifted by the favor: the same scores, compared with it
        let bundle = Decoding { margins: true, main_margin: Some(0.25), ..plain }.shifted(1.0);
        let decided = decide_blocks(4, &blocks, &outputs, &bundle, None, None, 4).unwrap();
        assert_eq!((decided.predictions.clone(), decided.threshold), (vec![1, 0, 1, 0], 1.25));
        assert_eq!(&decided.scores[..3], &argmax.scores[..3]);
        // keep_best_block keeps a block below the threshold: its score says so
        let strict = Decoding { keep_best_block: true, main_margin: Some(5.0), ..bundle };
        let kept = decide_blocks(4, &blocks, &outputs, &strict, None, None, 4).unwrap();
        assert_eq!(kept.predictions, vec![0, 0, 1, 0]);
        assert!(kept.scores[2] < kept.threshold as f32);
        // per label, the score of the block whose label it took (a repeated id: the last)
        let ids = [Some("a".to_string()), None, Some("b".to_string()), Some("a".to_string())];
        let labels = labels_from_predictions(&ids, &[1, 1, 0, 0]);
        assert_eq!(labels, vec![("a".to_string(), false), ("b".to_string(), false)]);
        assert_eq!(label_scores(&ids[..3], &[2.0, -0.5, 4.0]), vec![2.0, 4.0]);
        let last = label_scores(&ids, &kept.scores);
        assert!(last[0].is_nan() && last[1] == 4.0);
    }

    #[test]
    fn expected_f1_keeps_the_prefix_of_the_ranking_with_the_best_expected_f1() {
        // beside a long sure main block (p 0.98), a short block is kept from p ≈ F1/2: at even
        // odds (p 0.5) it is, at p 0.3 it is not; a long unlikely block (p 0.12) is not
        let words = [200.0f32, 5.0, 100.0];
        assert_eq!(expected_f1_labels(&[4.0, 0.0, -2.0], &words, 0.0), vec![1, 1, 0]);
        assert_eq!(expected_f1_labels(&[4.0, -0.85, -2.0], &words, 0.0), vec![1, 0, 0]);
        assert_eq!(margin_labels(&[4.0, -0.85, -2.0], -1.0), vec![1, 1, 0]);
        // a page of uncertain blocks of equal size keeps blocks below even odds
        let flat = [-0.5f32, -0.5, -0.5, -3.0];
        assert_eq!(expected_f1_labels(&flat, &[50.0, 50.0, 50.0, 50.0], 0.0), vec![1, 1, 1, 0]);
        // the threshold shifts every probability; NaN is other; blocks without words go by
        // the threshold alone
        assert_eq!(
            expected_f1_labels(&[4.0, f32::NAN, 1.0, -1.0], &[10.0, 10.0, 0.0, 0.0], 0.0),
            vec![1, 0, 1, 0]
        );
        assert_eq!(expected_f1_labels(&[4.0, 1.0], &[10.0, 0.0], 2.0), vec![1, 0]);
        assert_eq!(expected_f1_labels(&[], &[], 0.0), Vec::<usize>::new());
    }

    #[test]
    fn container_prior_shifts_the_blocks_outside_the_dominant_container() {
        use crate::features::context::{N_FEATURES_V2, N_FEATURES_V3};
        // blocks 0 and 1 under container 7 (most of the expected words), block 2 under 9
        let mut rows = vec![-1.0f32; 3 * N_FEATURES_V3];
        for (i, (words, id)) in [(100.0, 7.0), (100.0, 7.0), (20.0, 9.0)].into_iter().enumerate() {
            rows[i * N_FEATURES_V3 + WORDS] = words;
            rows[i * N_FEATURES_V3 + N_FEATURES_V2] = id;
        }
        let prior = ContainerPrior { share: 0.75, shift: 1.5 };
        let mut scores = [2.0f32, f32::NAN, 2.0];
        assert_eq!(container_prior(&mut scores, &rows, prior), Some(()));
        assert_eq!((scores[0], scores[2]), (2.0, 0.5));
        assert!(scores[1].is_nan());
        // with block 1 NaN, 7 holds about 83% of the expected main words: below 0.9, untouched
        let mut scores = [2.0f32, f32::NAN, 2.0];
        container_prior(&mut scores, &rows, ContainerPrior { share: 0.9, shift: 1.5 }).unwrap();
        assert_eq!((scores[0], scores[2]), (2.0, 2.0));
        // rows without container columns
        assert_eq!(container_prior(&mut [1.0, 1.0], &[0.0; 10], prior), None);
    }

    #[test]
    fn story_prior_lowers_the_linked_blocks_outside_the_story_s_container() {
        use crate::features::context::{LINK_RATIO, N_FEATURES_V2, N_FEATURES_V3};
        // a short story (2 prose blocks under 7) beside a rail of 4 linked headlines under 9
        // that expect more main words; an unlinked note under 9 too
        let blocks = [
            (30.0, 0.0, 7.0),
            (30.0, 0.0, 7.0),
            (40.0, 1.0, 9.0),
            (40.0, 1.0, 9.0),
            (40.0, 0.5, 9.0),
            (40.0, 0.9, 9.0),
            (5.0, 0.0, 9.0),
        ];
        let mut rows = vec![-1.0f32; blocks.len() * N_FEATURES_V3];
        for (i, (words, linked, id)) in blocks.into_iter().enumerate() {
            rows[i * N_FEATURES_V3 + WORDS] = words;
            rows[i * N_FEATURES_V3 + LINK_RATIO] = linked;
            rows[i * N_FEATURES_V3 + N_FEATURES_V2] = id;
        }
        let prior = ContainerPrior { share: 0.75, shift: 3.0 };
        let mut scores = [1.0f32; 7];
        assert_eq!(story_prior(&mut scores, &rows, prior, None), Some(()));
        assert_eq!(scores, [1.0, 1.0, -2.0, -2.0, -2.0, -2.0, 1.0]);
        // the story expects 2 x 30 x sigmoid(1) = 43.9 main words: a short story under 50,
        // whose linked blocks outside are lowered by 5 and its prose outside by 0.5; not
        // under 40, decided as without
        let short = ShortStory { words: 50.0, shift: 5.0, prose_shift: 0.5 };
        let mut scores = [1.0f32; 7];
        story_prior(&mut scores, &rows, prior, Some(short)).unwrap();
        assert_eq!(scores, [1.0, 1.0, -4.0, -4.0, -4.0, -4.0, 0.5]);
        let mut scores = [1.0f32; 7];
        story_prior(&mut scores, &rows, prior, Some(ShortStory { words: 40.0, ..short })).unwrap();
        assert_eq!(scores, [1.0, 1.0, -2.0, -2.0, -2.0, -2.0, 1.0]);
        // the container prior alone picks the rail's container (160 of 225 expected words)
        let mut scores = [1.0f32; 7];
        container_prior(&mut scores, &rows, ContainerPrior { share: 0.6, shift: 3.0 }).unwrap();
        assert_eq!(scores, [-2.0, -2.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        // no prose expected: untouched; rows without container columns: None
        let mut scores = [1.0f32, 1.0, 1.0, 1.0, 1.0, 1.0, f32::NAN];
        for i in [0, 1] {
            scores[i] = f32::NAN;
        }
        story_prior(&mut scores[..], &rows, prior, Some(short)).unwrap();
        assert_eq!(&scores[2..6], &[1.0, 1.0, 1.0, 1.0]);
        assert_eq!(story_prior(&mut [1.0, 1.0], &[0.0; 10], prior, None), None);
    }

    /// A story's prose runs on under its element: the prose blocks after a main one whose
    /// parent or grandparent is the story's parent become main, until one of them is left
    /// other (no score); prose elsewhere neither joins nor ends it; short or linked blocks are
    /// passed over; a main block elsewhere starts a story of its own.
    #[test]
    fn continue_story_runs_a_main_prose_block_on_under_its_parent() {
        use crate::features::context::{N_FEATURES_V2, N_FEATURES_V3};
        // (words, link ratio, parent, grandparent)
        let blocks = [
            (40.0, 0.0, 7.0, 5.0),   // 0 main prose: the story (7) starts
            (3.0, 0.0, 7.0, 5.0),    // 1 short: passed over
            (60.0, 0.0, 7.0, 5.0),   // 2 prose under 7: joins
            (30.0, 0.5, 7.0, 5.0),   // 3 linked: passed over, stays other
            (50.0, 0.1, 8.0, 7.0),   // 4 a list item (8 under 7): joins
            (50.0, 0.0, 3.0, 2.0),   // 5 prose elsewhere: stays other, the story goes on
            (50.0, 0.0, 7.0, 5.0),   // 6 joins
            (50.0, 0.0, 7.0, 5.0),   // 7 no score (cut by the limits): stays other, ends it
            (50.0, 0.0, 7.0, 5.0),   // 8 stays other
            (80.0, 0.0, 9.0, 5.0),   // 9 main prose elsewhere: a story under 9
            (20.0, 0.0, 9.0, 5.0),   // 10 joins
            (20.0, 0.0, -1.0, -1.0), // 11 no parent column: stays other
        ];
        let mut rows = vec![-1.0f32; blocks.len() * N_FEATURES_V3];
        for (i, &(words, links, parent, grandparent)) in blocks.iter().enumerate() {
            let row = &mut rows[i * N_FEATURES_V3..(i + 1) * N_FEATURES_V3];
            row[WORDS] = words;
            row[crate::features::context::LINK_RATIO] = links;
            row[N_FEATURES_V2] = parent;
            row[N_FEATURES_V2 + 1] = grandparent;
        }
        let mut scores = [1.0f32; 12];
        scores[7] = f32::NAN;
        let mut labels = vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0];
        assert_eq!(continue_story(&mut labels, &scores, &rows), Some(()));
        assert_eq!(labels, [1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0]);
        // rows without container columns
        assert_eq!(continue_story(&mut [1, 0], &[1.0, 1.0], &[0.0; 10]), None);
    }

    /// A text the page holds `STORY_COPIES` times or more (a placeholder under each embed)
    /// neither joins the story nor ends it; one it holds twice joins.
    #[test]
    fn continue_story_passes_over_a_text_the_page_holds_three_times() {
        use crate::features::context::{LINK_RATIO, N_FEATURES_V2, N_FEATURES_V3, REPEATS};
        // (words, copies of its text on the page), every block under the story's parent 7
        let blocks = [(40.0, 1.0), (37.0, 3.0), (50.0, 1.0), (37.0, 7.0), (20.0, 2.0), (30.0, 1.0)];
        let mut rows = vec![-1.0f32; blocks.len() * N_FEATURES_V3];
        for (i, &(words, copies)) in blocks.iter().enumerate() {
            let row = &mut rows[i * N_FEATURES_V3..(i + 1) * N_FEATURES_V3];
            row[WORDS] = words;
            row[LINK_RATIO] = 0.0;
            row[REPEATS] = copies;
            row[N_FEATURES_V2] = 7.0;
            row[N_FEATURES_V2 + 1] = 5.0;
        }
        let mut labels = vec![1, 0, 0, 0, 0, 0];
        continue_story(&mut labels, &[1.0; 6], &rows).unwrap();
        assert_eq!(labels, [1, 0, 1, 0, 1, 1]);
    }

    #[test]
    fn argmax_takes_the_first_maximum_and_margins_subtract() {
        assert_eq!(argmax_labels(&[1.0, 2.0, 3.0, 3.0, 0.5, -1.0], 2), vec![1, 0, 0]);
        assert_eq!(argmax_labels(&[0.0, f32::NAN, 5.0, 1.0], 2), vec![1, 0]);
        assert_eq!(sep_margins(&[1.0, 2.5, 3.0, 1.0], 2), vec![1.5, -2.0]);
    }

    #[test]
    fn blocks_get_their_chunks_predictions_in_order() {
        let blocks: Vec<&[usize]> = vec![&[0, 1, 2], &[3]];
        assert_eq!(block_predictions(5, &blocks, &[vec![1, 1], vec![1, 0]]), vec![1, 1, 0, 1, 0]);
        let margins = block_margins(5, &blocks, &[vec![0.5], vec![2.0, 9.0]]);
        assert_eq!(margins[0], 0.5);
        assert!(margins[1].is_nan() && margins[4].is_nan());
        assert_eq!(margins[3], 2.0);
    }

    #[test]
    fn threshold_keep_best_and_labels() {
        assert_eq!(margin_labels(&[-0.5, -1.0, f32::NAN, 3.0], -1.0), vec![1, 0, 0, 1]);
        assert_eq!(keep_best_block(vec![0, 0, 0], &[f32::NAN, 2.0, 2.0]), vec![0, 1, 0]);
        assert_eq!(keep_best_block(vec![0, 0], &[f32::NAN, f32::NAN]), vec![0, 0]);
        assert_eq!(keep_best_block(vec![0, 1], &[5.0, 1.0]), vec![0, 1]);
        let ids = [Some("1".to_string()), None, Some("2".to_string()), Some("1".to_string())];
        assert_eq!(
            labels_from_predictions(&ids, &[1, 1, 0, 0]),
            vec![("1".to_string(), false), ("2".to_string(), false)]
        );
    }
}
