//! The `fast` profile's blocks in context (`runtime/stages/rescore.py`' `context_features` and
//! `stage_features`, context `context-v4`): one page's `blocks-v3` rows widened with their
//! neighbours' values, windowed means, page totals and container groups, and the first
//! stage's probabilities read the same way. Context `context-v5` reads `blocks-v4` rows: the
//! same columns from their `blocks-v3` part, then each row's own dialog columns; `context-v6`
//! reads `blocks-v5` rows: the same, then each row's own dialog and rail columns.
//! `tests/spec/context_spec.py` is the specification, in NumPy; the training (`train/fast.py`), the Python page flow and the C
//! library all compute these columns here.
//!
//! Values are computed in float64 in the specification's order of operations and written as
//! float32: windowed means from sequential running sums (`np.cumsum`), page sums and means
//! with NumPy's pairwise summation (`pairwise_sum`), group sums (`np.bincount`) block by
//! block, ranks from a stable sort. What may still differ by an ulp is `log1p` (NumPy may use
//! its own SIMD implementation); the tests compare with a tolerance.

use crate::hash::FastMap;

use super::{N_CONTAINERS, N_DIALOGS, N_EXTRAS, N_FEATURES, N_RAILS, N_TEASERS, PAGE, TEXT_STATS};

/// Columns of layout `blocks-v2` (`blocks-v1` and the extras) and `blocks-v3` (and the
/// container identifiers), the rows `context_features` reads.
pub const N_FEATURES_V2: usize = N_FEATURES + N_EXTRAS;
pub const N_FEATURES_V3: usize = N_FEATURES_V2 + N_CONTAINERS;
/// Columns of layout `blocks-v4` (`blocks-v3` and the dialog columns), the rows of
/// `context-v5`.
pub const N_FEATURES_V4: usize = N_FEATURES_V3 + N_DIALOGS;
/// Columns of layout `blocks-v5` (`blocks-v4` and the rail columns), the rows of
/// `context-v6`.
pub const N_FEATURES_V5: usize = N_FEATURES_V4 + N_RAILS;
/// Columns of layout `blocks-v6` (`blocks-v5` and the teaser columns), the rows of
/// `context-v7`.
pub const N_FEATURES_V6: usize = N_FEATURES_V5 + N_TEASERS;

// the block columns read here (`features.FEATURE_NAMES_V2`)
const TAG: usize = 0;
pub(crate) const WORDS: usize = 2;
const CHARS: usize = 3;
pub(crate) const LINK_RATIO: usize = 4;
const LINKS: usize = 5;
const IMAGES: usize = 6;
const PUNCT_RATIO: usize = 7;
const PUNCT: usize = 8;
const DEPTH: usize = 9;
const IN_LINK: usize = 10;
const SENTENCES: usize = 11;
const IN_CANDIDATE: usize = PAGE + 11;
/// `repeats`: the copies of the block's text on the page, itself counted.
pub(crate) const REPEATS: usize = PAGE + 14;
const STOPWORD_RATIO: usize = TEXT_STATS;
const DIGIT_RATIO: usize = TEXT_STATS + 1;
const MEAN_WORD_LENGTH: usize = TEXT_STATS + 2;
const CJK_CHARS: usize = N_FEATURES;

/// The block columns a row sees of its neighbours (shifted 1 and 2 each way), of the windows
/// around it (means over ±3 and ±10 blocks) and relative to the page's mean.
pub const CONTEXT_COLUMNS: [usize; 13] = [
    WORDS, LINK_RATIO, PUNCT_RATIO, SENTENCES, DEPTH, IN_LINK, STOPWORD_RATIO, TAG, IMAGES, IN_CANDIDATE,
    MEAN_WORD_LENGTH, DIGIT_RATIO, REPEATS,
];
/// The value of a neighbour past the page's first or last block.
pub const NO_NEIGHBOUR: f64 = -1.0;
/// The levels of a block's ancestor chain (1: its parent) whose blocks are read together (the
/// container columns of `blocks-v3` hold the chain's first `N_CONTAINERS` ancestors).
pub const GROUP_LEVELS: [usize; 6] = [1, 2, 3, 4, 6, 8];
const _: () = assert!(GROUP_LEVELS[GROUP_LEVELS.len() - 1] <= N_CONTAINERS);
/// `container_features`' columns per level.
pub const N_GROUP: usize = 4;
/// `stage_features`' columns per level.
pub const N_STAGE_GROUP: usize = 4;
/// A block's copies: the blocks whose text the page holds more than once (`repeats` >= 2)
/// with these columns equal (the rows hold no text, only its statistics).
pub const COPY_COLUMNS: [usize; 8] =
    [WORDS, CHARS, PUNCT, LINKS, STOPWORD_RATIO, DIGIT_RATIO, MEAN_WORD_LENGTH, REPEATS];
/// The level of two copies that share no container column.
pub const COPY_APART: usize = N_CONTAINERS + 1;
/// Copies sharing an ancestor up to this level are near each other.
pub const NEAR_COPY_LEVEL: usize = 3;
/// `copy_features`' columns, and `stage_features`' columns from the copies.
pub const N_COPY: usize = 3;
pub const N_STAGE_COPY: usize = 2;
pub const N_CONTEXT: usize =
    N_FEATURES_V2 + 7 * CONTEXT_COLUMNS.len() + 2 + 4 + 4 + N_GROUP * GROUP_LEVELS.len() + N_COPY;
pub const N_STAGE: usize = 16 + N_STAGE_GROUP * GROUP_LEVELS.len() + N_STAGE_COPY;
/// `context_features`' columns for `blocks-v4` rows (context `context-v5`).
pub const N_CONTEXT_V5: usize = N_CONTEXT + N_DIALOGS;
/// `context_features`' columns for `blocks-v5` rows (context `context-v6`).
pub const N_CONTEXT_V6: usize = N_CONTEXT_V5 + N_RAILS;
/// `context_features`' columns for `blocks-v6` rows (context `context-v7`).
pub const N_CONTEXT_V7: usize = N_CONTEXT_V6 + N_TEASERS;

/// The `blocks-v3` part of `blocks-v4` or `blocks-v5` rows (`columns` wide; as they are when
/// `blocks-v3`), the rows of `context-v4`'s columns, and the columns after it apart (the
/// dialog columns, and the rail columns after them; none for `blocks-v3`).
fn split_v3(rows: &[f32], columns: usize) -> (std::borrow::Cow<'_, [f32]>, Vec<f32>) {
    if columns == N_FEATURES_V3 {
        return (std::borrow::Cow::Borrowed(rows), Vec::new());
    }
    let n = rows.len() / columns;
    let (mut v3, mut after) =
        (Vec::with_capacity(n * N_FEATURES_V3), Vec::with_capacity(n * (columns - N_FEATURES_V3)));
    for row in rows.chunks_exact(columns) {
        v3.extend_from_slice(&row[..N_FEATURES_V3]);
        after.extend_from_slice(&row[N_FEATURES_V3..]);
    }
    (std::borrow::Cow::Owned(v3), after)
}

/// Whether `columns` is a layout read in context (`blocks-v3` to `blocks-v6`) and `rows`
/// whole rows of it.
pub(crate) fn read_in_context(rows: &[f32], columns: usize) -> bool {
    matches!(columns, N_FEATURES_V3 | N_FEATURES_V4 | N_FEATURES_V5 | N_FEATURES_V6)
        && rows.len().is_multiple_of(columns)
}

/// NumPy's `pairwise_sum` of float64 (`np.sum` / `np.mean` of a 1-D array, and of each column
/// of a Fortran-ordered 2-D one): eight accumulators over blocks of up to 128 values, halves
/// (at a multiple of 8) above that.
pub fn pairwise_sum(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 8 {
        let mut sum = 0.0;
        for &v in values {
            sum += v;
        }
        sum
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&values[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (j, slot) in r.iter_mut().enumerate() {
                *slot += values[i + j];
            }
            i += 8;
        }
        let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in &values[i..] {
            sum += v;
        }
        sum
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
    }
}

/// Python's `max(a, b)`: `a` unless `b` is greater (so NaN in `a` stays).
fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// NumPy's `maximum` / `minimum`: NaN when either is NaN.
fn np_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if b > a {
        b
    } else {
        a
    }
}

fn np_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if b < a {
        b
    } else {
        a
    }
}

/// `_shift`: `values` moved `by` rows down (negative: up), `fill` where nothing moved in.
fn shift(values: &[f64], by: isize, fill: f64) -> Vec<f64> {
    let n = values.len() as isize;
    (0..n)
        .map(|i| {
            let from = i - by;
            if (0..n).contains(&from) {
                values[from as usize]
            } else {
                fill
            }
        })
        .collect()
}

/// `_window_mean`: per row, the mean of the rows within `radius` of it (fewer at the page's
/// ends), from running sums as `np.cumsum` adds them.
fn window_mean(values: &[f64], radius: usize) -> Vec<f64> {
    let n = values.len();
    let mut sums = Vec::with_capacity(n + 1);
    sums.push(0.0);
    let mut running = 0.0;
    for &v in values {
        running += v;
        sums.push(running);
    }
    (0..n)
        .map(|i| {
            let low = i.saturating_sub(radius);
            let high = (i + radius + 1).min(n);
            (sums[high] - sums[low]) / (high - low) as f64
        })
        .collect()
}

/// Column `column` of row-major `rows` (`width` columns) in float64.
fn column(rows: &[f32], width: usize, column: usize) -> Vec<f64> {
    rows.chunks_exact(width).map(|row| f64::from(row[column])).collect()
}

/// `container_groups`: per level of `GROUP_LEVELS`, each block's group (blocks of one page
/// sharing that ancestor get the same number, in order of first appearance); a block whose
/// chain is shorter (a negative identifier) is a group of its own. `rows`: `blocks-v3`.
pub fn container_groups(rows: &[f32]) -> Vec<Vec<usize>> {
    GROUP_LEVELS
        .iter()
        .map(|&level| {
            let mut numbers: FastMap<u64, usize> = FastMap::default();
            let mut next = 0usize;
            rows.chunks_exact(N_FEATURES_V3)
                .map(|row| {
                    let key = f64::from(row[N_FEATURES_V2 + level - 1]);
                    if key < 0.0 {
                        next += 1;
                        return next - 1;
                    }
                    // as np.unique: -0.0 is 0.0, all NaNs one value
                    let bits = if key.is_nan() { f64::NAN.to_bits() } else { (key + 0.0).to_bits() };
                    *numbers.entry(bits).or_insert_with(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect()
        })
        .collect()
}

/// `np.bincount(group, weights)`: per group, its blocks' weights added in block order.
fn group_sums(group: &[usize], weights: &[f64]) -> Vec<f64> {
    let mut sums = vec![0.0f64; group.iter().max().map_or(0, |&g| g + 1)];
    for (&g, &w) in group.iter().zip(weights) {
        sums[g] += w;
    }
    sums
}

/// `_group_mean`: per block, the `weights`-weighted mean of `values` over its group.
fn group_mean(values: &[f64], weights: &[f64], group: &[usize]) -> Vec<f64> {
    let total = group_sums(group, weights);
    let products: Vec<f64> = values.iter().zip(weights).map(|(v, w)| v * w).collect();
    let sums = group_sums(group, &products);
    group.iter().map(|&g| sums[g] / np_max(total[g], 1e-12)).collect()
}

/// Row-major `[n, columns.len()]` float32 of float64 columns (`np.stack(parts, 1)`).
fn write_columns(out: &mut [f32], width: usize, at: usize, columns: &[Vec<f64>]) {
    for (c, values) in columns.iter().enumerate() {
        for (row, &v) in values.iter().enumerate() {
            out[row * width + at + c] = v as f32;
        }
    }
}

/// `container_features`: `N_GROUP` columns per level of `GROUP_LEVELS` (the group's mean
/// words, its share of the page's words, how many blocks it has (log), its word-weighted
/// link ratio), column-wise.
fn container_columns(rows: &[f32]) -> Vec<Vec<f64>> {
    let words = column(rows, N_FEATURES_V3, WORDS);
    let link_ratio = column(rows, N_FEATURES_V3, LINK_RATIO);
    let total = py_max(pairwise_sum(&words), 1.0);
    let ones = vec![1.0f64; words.len()];
    let words_plus_one: Vec<f64> = words.iter().map(|w| w + 1.0).collect();
    let mut parts = Vec::with_capacity(N_GROUP * GROUP_LEVELS.len());
    for group in container_groups(rows) {
        let count = group_sums(&group, &ones);
        let word_sums = group_sums(&group, &words);
        parts.push(group_mean(&words, &ones, &group));
        parts.push(group.iter().map(|&g| word_sums[g] / total).collect());
        parts.push(group.iter().map(|&g| count[g].ln_1p()).collect());
        parts.push(group_mean(&link_ratio, &words_plus_one, &group));
    }
    parts
}

/// `copy_groups`: the blocks of one page that are copies of each other (`COPY_COLUMNS`),
/// each group in block order, groups of two or more in order of their first block. As the
/// specification's tuples of floats: -0.0 is 0.0, and a NaN in the key is never a copy.
pub fn copy_groups(rows: &[f32]) -> Vec<Vec<usize>> {
    let mut numbers: FastMap<[u32; COPY_COLUMNS.len()], usize> = FastMap::default();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, row) in rows.chunks_exact(N_FEATURES_V3).enumerate() {
        // a NaN count is no copy, as the specification's `>= 2` says
        if row[REPEATS].is_nan() || row[REPEATS] < 2.0 || COPY_COLUMNS.iter().any(|&c| row[c].is_nan()) {
            continue;
        }
        let key = COPY_COLUMNS.map(|c| (row[c] + 0.0).to_bits());
        let number = *numbers.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[number].push(i);
    }
    groups.retain(|group| group.len() >= 2);
    groups
}

/// Block `i`'s ancestor identifier at `level` (1: its parent), from the container columns
/// (negative past the end of its chain).
fn container_id(rows: &[f32], i: usize, level: usize) -> f32 {
    rows[i * N_FEATURES_V3 + N_FEATURES_V2 + level - 1]
}

/// The level of the nearest ancestor blocks `i` and `j` share, `COPY_APART` when they share
/// none of the container columns.
fn common_level(rows: &[f32], i: usize, j: usize) -> usize {
    (1..=N_CONTAINERS)
        .find(|&level| {
            let id = container_id(rows, i, level);
            id >= 0.0 && id == container_id(rows, j, level)
        })
        .unwrap_or(COPY_APART)
}

/// Per copy of each group, the copies sharing its ancestor at each level, counted: the
/// nearest level another copy shares is the first whose count is two or more (the
/// specification's minimum over pairs, in linear time: a page may repeat one link
/// thousands of times). Keys: (group, level, identifier bits).
fn shared_counts(rows: &[f32], groups: &[Vec<usize>]) -> FastMap<(usize, usize, u32), usize> {
    let mut counts: FastMap<(usize, usize, u32), usize> = FastMap::default();
    for (g, group) in groups.iter().enumerate() {
        for &i in group {
            for level in 1..=N_CONTAINERS {
                let id = container_id(rows, i, level);
                if id >= 0.0 {
                    *counts.entry((g, level, (id + 0.0).to_bits())).or_default() += 1;
                }
            }
        }
    }
    counts
}

/// `copy_features`: `N_COPY` columns per block (1 for a later copy, the level shared with the
/// first copy, the nearest level shared with any other copy; 0 where they do not apply),
/// column-wise.
fn copy_columns(rows: &[f32]) -> Vec<Vec<f64>> {
    let n = rows.len() / N_FEATURES_V3;
    let mut parts = vec![vec![0.0f64; n]; N_COPY];
    let groups = copy_groups(rows);
    let counts = shared_counts(rows, &groups);
    for (g, group) in groups.iter().enumerate() {
        for &i in group {
            let nearest = (1..=N_CONTAINERS)
                .find(|&level| {
                    let id = container_id(rows, i, level);
                    id >= 0.0 && counts[&(g, level, (id + 0.0).to_bits())] >= 2
                })
                .unwrap_or(COPY_APART);
            parts[2][i] = nearest as f64;
            if i != group[0] {
                parts[0][i] = 1.0;
                parts[1][i] = common_level(rows, i, group[0]) as f64;
            }
        }
    }
    parts
}

/// Per ancestor, its copies' highest probability with its block, and the second highest.
type NearestCopies = ((f64, usize), Option<f64>);

/// `stage_features`' `N_STAGE_COPY` columns: per later copy the first copy's probability, per
/// copy the highest probability of the other copies within `NEAR_COPY_LEVEL` of it
/// (`NO_NEIGHBOUR` where none), column-wise. Those copies are the ones with the same ancestor
/// at the same level, the highest up to `NEAR_COPY_LEVEL` that it has (a shared parent is a
/// shared grandparent), so the two highest probabilities per such ancestor give the answer.
fn copy_stage_columns(p: &[f64], rows: &[f32]) -> Vec<Vec<f64>> {
    let n = p.len();
    let mut first = vec![NO_NEIGHBOUR; n];
    let mut near = vec![NO_NEIGHBOUR; n];
    for group in copy_groups(rows) {
        // (level, identifier bits) of its highest ancestor up to NEAR_COPY_LEVEL
        let near_id = |i: usize| {
            (1..=NEAR_COPY_LEVEL)
                .rev()
                .map(|level| (level, container_id(rows, i, level)))
                .find(|&(_, id)| id >= 0.0)
                .map(|(level, id)| (level, (id + 0.0).to_bits()))
        };
        // per ancestor: the highest probability and its block, and the second highest
        let mut best: FastMap<(usize, u32), NearestCopies> = FastMap::default();
        for &i in &group {
            first[i] = if i == group[0] { NO_NEIGHBOUR } else { p[group[0]] };
            let Some(id) = near_id(i) else { continue };
            let entry = best.entry(id).or_insert(((p[i], i), None));
            if entry.0 .1 != i {
                if p[i] > entry.0 .0 {
                    entry.1 = Some(entry.0 .0);
                    entry.0 = (p[i], i);
                } else if entry.1.is_none_or(|second| p[i] > second) {
                    entry.1 = Some(p[i]);
                }
            }
        }
        for &i in &group {
            let Some(id) = near_id(i) else { continue };
            let ((top, holder), second) = best[&id];
            let other = if holder == i { second } else { Some(top) };
            if let Some(value) = other {
                near[i] = value;
            }
        }
    }
    vec![first, near]
}

/// The message for rows of another width than `blocks-v3` (`what`: whose).
fn wrong_width(what: &str, columns: usize) -> String {
    format!(
        "{what} read blocks-v3 rows ({N_FEATURES_V3} columns), blocks-v4 rows ({N_FEATURES_V4}), \
         blocks-v5 rows ({N_FEATURES_V5}) or blocks-v6 rows ({N_FEATURES_V6}), not {columns}"
    )
}

/// `context_features`: one page's `blocks-v3` rows (`rows` row-major, `columns` wide, in
/// block order), each widened to `N_CONTEXT` float32 columns: its own `blocks-v2` columns,
/// then for `CONTEXT_COLUMNS` the previous two and next two blocks' values, the means over
/// ±3 and ±10 blocks and the difference from the page's mean, then the depth steps to both
/// neighbours, the share of the page's unlinked words before and after it, the page's
/// unlinked words (log) and its share of linked words, then its words counting CJK
/// characters (`words` + `cjk_chars` / 2), their share of the page's, their mean over ±3
/// blocks and the page's share of CJK characters, then the container columns and last the
/// copy columns (`copy_columns`). `blocks-v4` rows (`context-v5`): those `N_CONTEXT` columns
/// of their `blocks-v3` part, then the row's `N_DIALOGS` dialog columns (`N_CONTEXT_V5` in
/// all); `blocks-v5` rows (`context-v6`): then its `N_RAILS` rail columns too
/// (`N_CONTEXT_V6`); `blocks-v6` rows (`context-v7`): and its `N_TEASERS` teaser columns
/// (`N_CONTEXT_V7`). An error naming the width for rows of another layout.
pub fn context_features(rows: &[f32], columns: usize) -> Result<Vec<f32>, String> {
    if !read_in_context(rows, columns) {
        return Err(wrong_width("context features", columns));
    }
    let (rows, after) = split_v3(rows, columns);
    let context = context_v4(&rows);
    if after.is_empty() {
        return Ok(context);
    }
    let extra = columns - N_FEATURES_V3;
    let width = match columns {
        N_FEATURES_V4 => N_CONTEXT_V5,
        N_FEATURES_V5 => N_CONTEXT_V6,
        _ => N_CONTEXT_V7,
    };
    debug_assert_eq!(width, N_CONTEXT + extra);
    let mut out = Vec::with_capacity(context.len() / N_CONTEXT * width);
    for (own, columns) in context.chunks_exact(N_CONTEXT).zip(after.chunks_exact(extra)) {
        out.extend_from_slice(own);
        out.extend_from_slice(columns);
    }
    Ok(out)
}

/// `context_features` of `blocks-v3` rows (whole rows).
fn context_v4(rows: &[f32]) -> Vec<f32> {
    let n = rows.len() / N_FEATURES_V3;
    let mut out = vec![0.0f32; n * N_CONTEXT];
    if n == 0 {
        return out;
    }
    for (row, target) in rows.chunks_exact(N_FEATURES_V3).zip(out.chunks_exact_mut(N_CONTEXT)) {
        target[..N_FEATURES_V2].copy_from_slice(&row[..N_FEATURES_V2]);
    }
    let mut at = N_FEATURES_V2;
    let own: Vec<Vec<f64>> = CONTEXT_COLUMNS.iter().map(|&c| column(rows, N_FEATURES_V3, c)).collect();
    for by in [1isize, 2, -1, -2] {
        let shifted: Vec<Vec<f64>> = own.iter().map(|values| shift(values, by, NO_NEIGHBOUR)).collect();
        write_columns(&mut out, N_CONTEXT, at, &shifted);
        at += own.len();
    }
    for radius in [3, 10] {
        let means: Vec<Vec<f64>> = own.iter().map(|values| window_mean(values, radius)).collect();
        write_columns(&mut out, N_CONTEXT, at, &means);
        at += own.len();
    }
    // `own.mean(0)`: `own` is Fortran-ordered (NumPy's fancy indexing), so each column's sum
    // is pairwise
    let centred: Vec<Vec<f64>> = own
        .iter()
        .map(|values| {
            let mean = pairwise_sum(values) / n as f64;
            values.iter().map(|v| v - mean).collect()
        })
        .collect();
    write_columns(&mut out, N_CONTEXT, at, &centred);
    at += own.len();
    let depth = column(rows, N_FEATURES_V3, DEPTH);
    let (before, after) = (shift(&depth, 1, 0.0), shift(&depth, -1, 0.0));
    let steps = vec![
        depth.iter().zip(&before).map(|(d, b)| d - b).collect(),
        depth.iter().zip(&after).map(|(d, a)| d - a).collect(),
    ];
    write_columns(&mut out, N_CONTEXT, at, &steps);
    at += 2;
    let words = column(rows, N_FEATURES_V3, WORDS);
    let link_ratio = column(rows, N_FEATURES_V3, LINK_RATIO);
    let mut unlinked = Vec::with_capacity(n);
    let mut running = 0.0;
    for (w, l) in words.iter().zip(&link_ratio) {
        running += w * (1.0 - l);
        unlinked.push(running);
    }
    let total = unlinked[n - 1] + 1e-6;
    let linked: Vec<f64> = words.iter().zip(&link_ratio).map(|(w, l)| w * l).collect();
    let linked_share = pairwise_sum(&linked) / (pairwise_sum(&words) + 1e-6);
    let page = vec![
        unlinked.iter().map(|u| u / total).collect(),
        unlinked.iter().map(|u| (total - u) / total).collect(),
        vec![total.ln_1p(); n],
        vec![linked_share; n],
    ];
    write_columns(&mut out, N_CONTEXT, at, &page);
    at += 4;
    let cjk = column(rows, N_FEATURES_V3, CJK_CHARS);
    let words_cjk: Vec<f64> = words.iter().zip(&cjk).map(|(w, c)| w + c / 2.0).collect();
    let words_cjk_total = py_max(pairwise_sum(&words_cjk), 1.0);
    let cjk_total = pairwise_sum(&cjk);
    let cjk_share = cjk_total / py_max(cjk_total + pairwise_sum(&words), 1.0);
    let cjk_columns = vec![
        words_cjk.clone(),
        words_cjk.iter().map(|w| w / words_cjk_total).collect(),
        window_mean(&words_cjk, 3),
        vec![cjk_share; n],
    ];
    write_columns(&mut out, N_CONTEXT, at, &cjk_columns);
    at += 4;
    write_columns(&mut out, N_CONTEXT, at, &container_columns(rows));
    at += N_GROUP * GROUP_LEVELS.len();
    write_columns(&mut out, N_CONTEXT, at, &copy_columns(rows));
    debug_assert_eq!(at + N_COPY, N_CONTEXT);
    out
}

/// Per block, its rank among `values` sorted high to low, ties in block order
/// (`np.argsort(np.argsort(-p, kind="stable"), kind="stable")`; NaN last, as NumPy sorts it).
fn descending_ranks(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (-values[a], -values[b]);
        match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => x.partial_cmp(&y).expect("not NaN"),
        }
    });
    let mut ranks = vec![0usize; values.len()];
    for (rank, &block) in order.iter().enumerate() {
        ranks[block] = rank;
    }
    ranks
}

/// `stage_features`: `N_STAGE` float32 columns per block from the first stage's
/// probabilities of one page (`rows`: its `blocks-v3`, `blocks-v4` or `blocks-v5` rows, `columns` wide,
/// of which the `blocks-v3` columns are read): its own, the
/// three blocks before and after (`NO_NEIGHBOUR` past the ends), the means over ±2, ±5 and
/// ±15 blocks, the word-weighted mean over ±5, the page's mean, maximum and word-weighted
/// mean, its rank on the page (0: the most likely), the lower of the highest probabilities
/// before and after it; then per level of `GROUP_LEVELS`, over its group: their
/// word-weighted and plain mean probability, their expected main words as a share of the
/// page's words, and its own probability less their word-weighted mean; last the copies'
/// (`copy_stage_columns`).
pub fn stage_features(probabilities: &[f64], rows: &[f32], columns: usize) -> Result<Vec<f32>, String> {
    let n = probabilities.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    if !read_in_context(rows, columns) {
        return Err(wrong_width("stage features", columns));
    }
    if rows.len() / columns != n {
        return Err(format!("stage features: {n} probabilities for {} blocks", rows.len() / columns));
    }
    let (rows, _) = split_v3(rows, columns);
    let rows: &[f32] = &rows;
    let p = probabilities;
    let words = column(rows, N_FEATURES_V3, WORDS);
    let weight: Vec<f64> = words.iter().map(|w| w.ln_1p()).collect();
    let mut parts: Vec<Vec<f64>> = Vec::with_capacity(N_STAGE);
    parts.push(p.to_vec());
    for by in [1isize, 2, 3, -1, -2, -3] {
        parts.push(shift(p, by, NO_NEIGHBOUR));
    }
    for radius in [2, 5, 15] {
        parts.push(window_mean(p, radius));
    }
    let weighted: Vec<f64> = p.iter().zip(&weight).map(|(p, w)| p * w).collect();
    let weighted_window = window_mean(&weighted, 5);
    let weight_window = window_mean(&weight, 5);
    parts.push(weighted_window.iter().zip(&weight_window).map(|(a, b)| a / (b + 1e-6)).collect());
    let maximum = p[1..].iter().fold(p[0], |m, &v| np_max(m, v));
    parts.push(vec![pairwise_sum(p) / n as f64; n]);
    parts.push(vec![maximum; n]);
    parts.push(vec![pairwise_sum(&weighted) / (pairwise_sum(&weight) + 1e-6); n]);
    parts.push(descending_ranks(p).into_iter().map(|r| r as f64 / n as f64).collect());
    let mut before = Vec::with_capacity(n);
    let mut highest = p[0];
    for &v in p {
        highest = np_max(highest, v);
        before.push(highest);
    }
    let mut after = vec![0.0f64; n];
    let mut highest = p[n - 1];
    for i in (0..n).rev() {
        highest = np_max(highest, p[i]);
        after[i] = highest;
    }
    parts.push(before.iter().zip(&after).map(|(&b, &a)| np_min(b, a)).collect());
    let total = py_max(pairwise_sum(&words), 1.0);
    let ones = vec![1.0f64; n];
    let words_plus_one: Vec<f64> = words.iter().map(|w| w + 1.0).collect();
    let main_words: Vec<f64> = p.iter().zip(&words).map(|(p, w)| p * w).collect();
    for group in container_groups(rows) {
        let weighted = group_mean(p, &words_plus_one, &group);
        let main_sums = group_sums(&group, &main_words);
        let own_less: Vec<f64> = p.iter().zip(&weighted).map(|(p, w)| p - w).collect();
        parts.push(weighted);
        parts.push(group_mean(p, &ones, &group));
        parts.push(group.iter().map(|&g| main_sums[g] / total).collect());
        parts.push(own_less);
    }
    parts.extend(copy_stage_columns(p, rows));
    debug_assert_eq!(parts.len(), N_STAGE);
    let mut out = vec![0.0f32; n * N_STAGE];
    write_columns(&mut out, N_STAGE, 0, &parts);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_columns_are_the_layouts() {
        assert_eq!((N_FEATURES_V2, N_FEATURES_V3, N_CONTEXT, N_STAGE), (199, 207, 327, 42));
        assert_eq!((N_FEATURES_V4, N_CONTEXT_V5), (209, 329));
        assert_eq!((N_FEATURES_V5, N_CONTEXT_V6), (216, 336));
        assert_eq!((N_FEATURES_V6, N_CONTEXT_V7), (227, 347));
        // rescore.CONTEXT_COLUMNS over features.FEATURE_NAMES_V2
        assert_eq!(CONTEXT_COLUMNS, [2, 4, 7, 11, 9, 10, 163, 0, 6, 157, 165, 164, 160]);
        assert_eq!(CJK_CHARS, 166);
    }

    #[test]
    fn pairwise_sum_adds_as_numpy_does() {
        // eight accumulators, then the rest; halves past 128 values
        let values: Vec<f64> = (0..300).map(|i| 1.0 / (i as f64 + 1.0)).collect();
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&values[..8]);
        for chunk in values[8..16].chunks(8) {
            for (slot, v) in r.iter_mut().zip(chunk) {
                *slot += v;
            }
        }
        let mut expected = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        expected += values[16];
        assert_eq!(pairwise_sum(&values[..17]), expected);
        assert_eq!(pairwise_sum(&values), pairwise_sum(&values[..144]) + pairwise_sum(&values[144..]));
        assert_eq!(pairwise_sum(&[1.0, 2.0]), 3.0);
    }

    fn v3_rows(words: &[f32], parents: &[f32]) -> Vec<f32> {
        let mut rows = vec![0.0f32; words.len() * N_FEATURES_V3];
        for (i, row) in rows.chunks_exact_mut(N_FEATURES_V3).enumerate() {
            row[WORDS] = words[i];
            row[N_FEATURES_V2..].fill(-1.0);
            row[N_FEATURES_V2] = parents[i];
        }
        rows
    }

    #[test]
    fn groups_are_shared_ancestors_and_blocks_without_one_stand_alone() {
        let rows = v3_rows(&[1.0, 2.0, 3.0, 4.0], &[7.0, 7.0, -1.0, 9.0]);
        let groups = container_groups(&rows);
        assert_eq!(groups[0], vec![0, 0, 1, 2]);
        assert_eq!(groups[1], vec![0, 1, 2, 3]); // no level-2 ancestors
    }

    /// Rows of blocks with `words` and `repeats`, each with its chain of ancestor ids.
    fn copy_rows(blocks: &[(f32, f32, &[f32])]) -> Vec<f32> {
        let mut rows = vec![0.0f32; blocks.len() * N_FEATURES_V3];
        for (row, &(words, repeats, chain)) in rows.chunks_exact_mut(N_FEATURES_V3).zip(blocks) {
            row[WORDS] = words;
            row[REPEATS] = repeats;
            row[N_FEATURES_V2..].fill(-1.0);
            row[N_FEATURES_V2..N_FEATURES_V2 + chain.len()].copy_from_slice(chain);
        }
        rows
    }

    /// The last `K` columns of each row of row-major `out` (`width` columns).
    fn last_columns<const K: usize>(out: &[f32], width: usize) -> Vec<[f32; K]> {
        out.chunks_exact(width).map(|r| r[width - K..].try_into().unwrap()).collect()
    }

    #[test]
    fn copies_are_read_by_where_the_others_are() {
        // a paragraph (40 words) in two sections (11, 12) of one article (10), a third time in
        // the footer (20 in 21 in 22) under the same body (1), one level deeper; a 3-word
        // link in the header (30 in 31) and in the footer; a unique paragraph
        let rows = copy_rows(&[
            (40.0, 3.0, &[11.0, 10.0, 5.0, 1.0]),
            (3.0, 2.0, &[30.0, 31.0, 1.0]),
            (40.0, 3.0, &[12.0, 10.0, 5.0, 1.0]),
            (40.0, 3.0, &[20.0, 21.0, 22.0, 1.0]),
            (3.0, 2.0, &[20.0, 21.0, 22.0, 1.0]),
            (40.0, 1.0, &[12.0, 10.0, 5.0, 1.0]),
        ]);
        assert_eq!(copy_groups(&rows), vec![vec![0, 2, 3], vec![1, 4]]);
        let copies = last_columns::<N_COPY>(&context_features(&rows, N_FEATURES_V3).unwrap(), N_CONTEXT);
        // later copy, level shared with the first copy, nearest level shared with any copy;
        // the links share body 1 at different levels: no shared level
        let apart = COPY_APART as f32;
        assert_eq!(
            copies,
            vec![
                [0.0, 0.0, 2.0],
                [0.0, 0.0, apart],
                [1.0, 2.0, 2.0],
                [1.0, 4.0, 4.0],
                [1.0, apart, apart],
                [0.0; 3]
            ]
        );
        let p = [0.9, 0.2, 0.1, 0.3, 0.6, 0.5];
        let copies =
            last_columns::<N_STAGE_COPY>(&stage_features(&p, &rows, N_FEATURES_V3).unwrap(), N_STAGE);
        // the first copy's probability; the highest of the copies within NEAR_COPY_LEVEL:
        // the article's two see each other, the footer's (level 4) sees none
        let none = NO_NEIGHBOUR as f32;
        assert_eq!(
            copies,
            vec![[none, 0.1], [none, none], [0.9, 0.9], [0.9, none], [0.2, none], [none, none]]
        );
    }

    #[test]
    fn copies_apart_share_no_container_column_and_nan_is_never_a_copy() {
        let rows = copy_rows(&[
            (5.0, 2.0, &[3.0]),
            (5.0, 2.0, &[4.0]),
            (f32::NAN, 2.0, &[3.0]),
            (f32::NAN, 2.0, &[3.0]),
        ]);
        assert_eq!(copy_groups(&rows), vec![vec![0, 1]]);
        let copies = last_columns::<N_COPY>(&context_features(&rows, N_FEATURES_V3).unwrap(), N_CONTEXT);
        let apart = COPY_APART as f32;
        assert_eq!(copies[..2], [[0.0, 0.0, apart], [1.0, apart, apart]]);
        let stage = stage_features(&[0.4, 0.7, 0.1, 0.2], &rows, N_FEATURES_V3).unwrap();
        let none = NO_NEIGHBOUR as f32;
        assert_eq!(last_columns::<N_STAGE_COPY>(&stage, N_STAGE)[..2], [[none, none], [0.4, none]]);
    }

    #[test]
    fn widths_other_than_blocks_v3_to_v6_are_refused_by_name() {
        let err = context_features(&[0.0; N_FEATURES_V2], N_FEATURES_V2).unwrap_err();
        assert_eq!(
            err,
            "context features read blocks-v3 rows (207 columns), blocks-v4 rows (209), blocks-v5 \
             rows (216) or blocks-v6 rows (227), not 199"
        );
        assert_eq!(context_features(&[], N_FEATURES_V3).unwrap().len(), 0);
        assert_eq!(context_features(&[], N_FEATURES_V4).unwrap().len(), 0);
        assert_eq!(stage_features(&[], &[], N_FEATURES_V3).unwrap().len(), 0);
        let err = stage_features(&[0.5], &[0.0; N_FEATURES_V4 + 1], N_FEATURES_V4 + 1).unwrap_err();
        assert!(err.starts_with("stage features read blocks-v3 rows"), "{err}");
    }

    #[test]
    fn blocks_v4_rows_read_as_their_blocks_v3_part_with_the_dialog_columns_after() {
        let v3 = v3_rows(&[10.0, 0.0, 30.0, 40.0], &[7.0, 7.0, 9.0, 9.0]);
        let dialogs = [[1.0, 40.0], [40.0, 40.0], [0.0, 2.0], [40.0, 3.0]];
        let mut v4 = Vec::new();
        for (row, dialog) in v3.chunks_exact(N_FEATURES_V3).zip(&dialogs) {
            v4.extend_from_slice(row);
            v4.extend_from_slice(dialog);
        }
        let (context, context_v3) =
            (context_features(&v4, N_FEATURES_V4).unwrap(), context_features(&v3, N_FEATURES_V3).unwrap());
        assert_eq!(context.len(), 4 * N_CONTEXT_V5);
        for ((row, row_v3), dialog) in
            context.chunks_exact(N_CONTEXT_V5).zip(context_v3.chunks_exact(N_CONTEXT)).zip(&dialogs)
        {
            assert_eq!(&row[..N_CONTEXT], row_v3);
            assert_eq!(&row[N_CONTEXT..], dialog);
        }
        let p = [0.9, 0.1, 0.6, 0.2];
        assert_eq!(
            stage_features(&p, &v4, N_FEATURES_V4).unwrap(),
            stage_features(&p, &v3, N_FEATURES_V3).unwrap()
        );
    }

    #[test]
    fn blocks_v5_rows_read_as_their_blocks_v3_part_with_the_dialog_and_rail_columns_after() {
        let v3 = v3_rows(&[10.0, 0.0, 30.0], &[7.0, 7.0, 9.0]);
        let after: Vec<Vec<f32>> =
            (0..3).map(|row| (0..N_DIALOGS + N_RAILS).map(|c| (row * 100 + c) as f32).collect()).collect();
        let mut v5 = Vec::new();
        for (row, columns) in v3.chunks_exact(N_FEATURES_V3).zip(&after) {
            v5.extend_from_slice(row);
            v5.extend_from_slice(columns);
        }
        let (context, context_v3) =
            (context_features(&v5, N_FEATURES_V5).unwrap(), context_features(&v3, N_FEATURES_V3).unwrap());
        assert_eq!(context.len(), 3 * N_CONTEXT_V6);
        for ((row, row_v3), columns) in
            context.chunks_exact(N_CONTEXT_V6).zip(context_v3.chunks_exact(N_CONTEXT)).zip(&after)
        {
            assert_eq!(&row[..N_CONTEXT], row_v3);
            assert_eq!(&row[N_CONTEXT..], &columns[..]);
        }
        let p = [0.9, 0.1, 0.6];
        assert_eq!(
            stage_features(&p, &v5, N_FEATURES_V5).unwrap(),
            stage_features(&p, &v3, N_FEATURES_V3).unwrap()
        );
    }

    #[test]
    fn stage_features_rank_and_region() {
        let rows = v3_rows(&[10.0, 0.0, 30.0, 40.0], &[7.0, 7.0, 9.0, 9.0]);
        let out = stage_features(&[0.9, 0.1, 0.6, 0.2], &rows, N_FEATURES_V3).unwrap();
        let col = |c: usize| -> Vec<f32> { out.chunks_exact(N_STAGE).map(|r| r[c]).collect() };
        assert_eq!(col(14), vec![0.0, 0.75, 0.25, 0.5]);
        assert_eq!(col(15), vec![0.9, 0.6, 0.6, 0.2]);
        assert_eq!(col(1), vec![-1.0, 0.9, 0.1, 0.6]);
        assert_eq!(col(17), vec![0.5, 0.5, 0.4, 0.4]);
    }
}
