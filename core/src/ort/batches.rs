//! Batches as `runtime/batches.py` makes them, so the C path groups and pads chunks exactly
//! as Python does: `make_batches` (length-sorted, greedy, under a padded-token budget and an
//! attention budget, never across a bucket), `FlatBatch` (`Batch`: rows concatenated plus
//! `cumulative_seq_lengths`), `FlatBatch::padded` (`Batch.padded`) and `sep_logits`
//! (`backends.sep_logits`).

use super::types::{BatchPlan, Bucket, FlatBatch, Logits, OrtError, PackShape, PackedCall};

/// `batches.DEFAULT_BUCKETS` (`export.profiles.SEQ_BUCKETS`).
pub const DEFAULT_BUCKETS: [usize; 7] = [128, 256, 512, 1024, 2048, 4096, 8192];
/// `batches.DEFAULT_MAX_BATCH_TOKENS`.
pub const DEFAULT_MAX_BATCH_TOKENS: usize = 16384;
/// `batches.DEFAULT_MAX_BATCH_ATTENTION`: rows × length² for engines whose attention
/// materialises `[rows, heads, L, L]` scores (ONNX Runtime's eager graph).
pub const DEFAULT_MAX_BATCH_ATTENTION: usize = 8192 * 8192;

/// `as_buckets(None)`.
pub fn default_buckets() -> Vec<Bucket> {
    DEFAULT_BUCKETS.iter().map(|&max_length| Bucket { max_length, max_rows: None }).collect()
}

/// `batches.bucket_for`: the smallest bucket that holds `length`, or past the last one a
/// bucket of its own (`Bucket(length, 1)`).
pub fn bucket_for(length: usize, buckets: &[Bucket]) -> Bucket {
    buckets
        .iter()
        .copied()
        .find(|b| length <= b.max_length)
        .unwrap_or(Bucket { max_length: length, max_rows: Some(1) })
}

/// `make_batches` for an engine that pads every row to the batch's longest (both engines
/// here: ONNX Runtime and TensorRT take `[rows, length]` inputs).
pub fn make_batches(
    lengths: &[usize],
    max_batch_tokens: usize,
    buckets: &[Bucket],
    max_batch_attention: Option<usize>,
) -> Vec<BatchPlan> {
    plan_batches(lengths, max_batch_tokens, buckets, max_batch_attention, true)
}

/// The one batcher (the engine's; `parity/batches.py`'s `make_batches` calls it too), over items
/// given by their lengths (the keys are the indices): items sorted by length (stable), cut
/// greedily so that the tokens the engine computes stay within `max_batch_tokens` (rows ×
/// longest for an engine that pads rows, `padded`; the sum of the lengths for one that does
/// not), rows × longest² ≤ `max_batch_attention` (when given) and rows ≤ the bucket's
/// `max_rows`, and no batch crosses a bucket. A single row over a budget still makes a
/// batch. `buckets` are sorted here as `as_buckets` sorts them.
pub fn plan_batches(
    lengths: &[usize],
    max_batch_tokens: usize,
    buckets: &[Bucket],
    max_batch_attention: Option<usize>,
    padded: bool,
) -> Vec<BatchPlan> {
    let mut bucket_list = buckets.to_vec();
    bucket_list.sort_by_key(|b| b.max_length); // stable, as Python's sorted
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut batches = Vec::new();
    let mut rows: Vec<usize> = Vec::new();
    let mut current: Option<Bucket> = None;
    let mut unpadded_tokens: u128 = 0; // the sum of the lengths in the current batch
    for index in order {
        let length = lengths[index];
        let bucket = bucket_for(length, &bucket_list);
        let count = (rows.len() + 1) as u128;
        let too_many = matches!(current, Some(Bucket { max_rows: Some(cap), .. }) if count > cap as u128);
        // items come shortest first: `length` is the longest so far
        let tokens = if padded { count * length as u128 } else { unpadded_tokens + length as u128 };
        let over = tokens > max_batch_tokens as u128
            || max_batch_attention.is_some_and(|cap| count * (length as u128).pow(2) > cap as u128);
        if !rows.is_empty() && (Some(bucket) != current || over || too_many) {
            batches
                .push(BatchPlan { rows: std::mem::take(&mut rows), bucket: current.expect("set with rows") });
            unpadded_tokens = 0;
        }
        rows.push(index);
        unpadded_tokens += length as u128;
        current = Some(bucket);
    }
    if let Some(bucket) = current.filter(|_| !rows.is_empty()) {
        batches.push(BatchPlan { rows, bucket });
    }
    batches
}

/// `backends.sep_logits`: per row of a padded batch, the logits at its `sep_id` tokens among
/// its first `lengths[row]` (real) tokens, flattened `[n_sep × labels]`.
pub fn sep_logits(logits: &Logits, padded_ids: &[i64], lengths: &[usize], sep_id: i64) -> Vec<Vec<f32>> {
    lengths
        .iter()
        .enumerate()
        .map(|(row, &n)| {
            let ids = &padded_ids[row * logits.length..row * logits.length + n];
            ids.iter()
                .enumerate()
                .filter(|(_, &id)| id == sep_id)
                .flat_map(|(position, _)| logits.at(row, position).iter().copied())
                .collect()
        })
        .collect()
}

/// Tokens of a packed call of chunks no longer than `bucket` (`packed_buckets`): at least the
/// bucket, else `tokens_per_call`.
pub fn packed_tokens(tokens_per_call: usize, bucket: usize) -> usize {
    tokens_per_call.max(bucket)
}

/// The fewest tokens a packed row may average when the batcher counts rows: a call holds at
/// most `tokens / MIN_PACKED_ROW` chunks, so that `token_offset` (`rows × longest`) stays a few
/// times the tokens.
pub const MIN_PACKED_ROW: usize = 16;

/// The buckets of a packed graph: a call holds chunks of one length bucket (its `token_offset`
/// is `[rows, bucket]`), at most as many as the tokens allow at the bucket's shortest length
/// (`MIN_PACKED_ROW` at least).
pub fn packed_buckets(tokens_per_call: usize) -> Vec<Bucket> {
    let mut previous = 0;
    DEFAULT_BUCKETS
        .iter()
        .map(|&bucket| {
            let tokens = packed_tokens(tokens_per_call, bucket);
            let rows = tokens / (previous + 1).max(MIN_PACKED_ROW);
            previous = bucket;
            Bucket { max_length: bucket, max_rows: Some(rows.max(1)) }
        })
        .collect()
}

/// The fixed shape of the calls of `bucket` (one of `packed_buckets`): its tokens, its rows
/// and, for the filler that fills the tokens up (rows of at most `bucket` tokens), as many
/// rows again as the bucket's length goes into the tokens.
pub fn packed_shape(bucket: &Bucket, tokens_per_call: usize) -> PackShape {
    let tokens = packed_tokens(tokens_per_call, bucket.max_length);
    let filler_rows = tokens.div_ceil(bucket.max_length);
    PackShape { tokens, rows: bucket.max_rows.unwrap_or(1) + filler_rows, longest: bucket.max_length }
}

/// `batch` packed into one row (`PackedCall`). With `shape` the call has that shape: the
/// tokens filled up with rows of `pad_id` (each at most `shape.longest` long, their own
/// chunks: nothing attends across them), then empty rows; a batch that does not fit is an
/// error. Without, the call is the batch's own: its chunks, its longest.
pub fn pack(batch: &FlatBatch, pad_id: i64, shape: Option<PackShape>) -> Result<PackedCall, OrtError> {
    let mut lengths = batch.lengths();
    let chunks = lengths.len();
    let real: usize = lengths.iter().sum();
    let longest = batch.max_length();
    let (tokens, rows, width) = match shape {
        None => (real, chunks, longest),
        Some(shape) => {
            if real > shape.tokens || longest > shape.longest || chunks > shape.rows {
                return Err(OrtError(format!(
                    "a batch of {chunks} chunks, {real} tokens, the longest {longest}, does not fit a \
                     packed call of {} chunks of at most {} tokens, {} in all",
                    shape.rows, shape.longest, shape.tokens
                )));
            }
            let mut left = shape.tokens - real;
            while left > 0 {
                let row = left.min(shape.longest);
                lengths.push(row);
                left -= row;
            }
            if lengths.len() > shape.rows {
                return Err(OrtError(format!(
                    "a packed call of {} chunks cannot hold {chunks} chunks and {} rows of filler",
                    shape.rows,
                    lengths.len() - chunks
                )));
            }
            lengths.resize(shape.rows, 0);
            (shape.tokens, shape.rows, shape.longest)
        }
    };
    let as_i32 = |n: usize, what: &str| {
        i32::try_from(n).map_err(|_| OrtError(format!("{what} {n} does not fit the graph's int32")))
    };
    as_i32(rows * width, "a token_offset of")?;
    let mut input_ids = Vec::with_capacity(tokens);
    input_ids.extend_from_slice(&batch.input_ids);
    input_ids.resize(tokens, pad_id);
    let mut position_ids = Vec::with_capacity(tokens);
    let mut cumulative_seq_lengths = Vec::with_capacity(rows + 1);
    cumulative_seq_lengths.push(0);
    let mut real_places = Vec::with_capacity(tokens);
    let mut pad_places = Vec::with_capacity(rows * width - tokens);
    for (row, &length) in lengths.iter().enumerate() {
        position_ids.extend(0..length as i64);
        cumulative_seq_lengths.push(as_i32(position_ids.len(), "a packed call of")?);
        let start = (row * width) as i32;
        real_places.extend(start..start + length as i32);
        pad_places.extend(start + length as i32..start + width as i32);
    }
    real_places.extend(pad_places);
    Ok(PackedCall {
        input_ids,
        position_ids,
        cumulative_seq_lengths,
        token_offset: real_places,
        rows,
        longest: width,
        chunks,
    })
}

/// `sep_logits` of a packed call: per chunk of `call`, the logits at its `sep_id` tokens
/// (`logits` is `[1, tokens, labels]`).
pub fn packed_sep_logits(logits: &Logits, call: &PackedCall, sep_id: i64) -> Vec<Vec<f32>> {
    (0..call.chunks)
        .map(|chunk| {
            let (start, end) = (
                call.cumulative_seq_lengths[chunk] as usize,
                call.cumulative_seq_lengths[chunk + 1] as usize,
            );
            (start..end)
                .filter(|&place| call.input_ids[place] == sep_id)
                .flat_map(|place| logits.at(0, place).iter().copied())
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(batches: &[BatchPlan]) -> Vec<(Vec<usize>, usize)> {
        batches.iter().map(|b| (b.rows.clone(), b.bucket.max_length)).collect()
    }

    #[test]
    fn sorted_by_length_and_cut_at_buckets_and_budgets() {
        // lengths 300 (index 0), 100, 120, 5000, 129, 100
        let lengths = [300, 100, 120, 5000, 129, 100];
        let batches = make_batches(&lengths, 16384, &default_buckets(), None);
        assert_eq!(
            plan(&batches),
            vec![(vec![1, 5, 2], 128), (vec![4], 256), (vec![0], 512), (vec![3], 8192)]
        );
        // a token budget of 250: 100+100 fit (2 × 100), the third row (3 × 120) does not
        let batches = make_batches(&lengths, 250, &default_buckets(), None);
        assert_eq!(plan(&batches)[..2], [(vec![1, 5], 128), (vec![2], 128)]);
        // the attention budget: 2 × 100² = 20,000 > 15,000
        let batches = make_batches(&lengths, 16384, &default_buckets(), Some(15_000));
        assert_eq!(plan(&batches)[..2], [(vec![1], 128), (vec![5], 128)]);
    }

    #[test]
    fn rows_past_the_last_bucket_get_one_bucket_each_and_row_caps_hold() {
        let buckets =
            [Bucket { max_length: 256, max_rows: Some(2) }, Bucket { max_length: 128, max_rows: Some(3) }];
        let batches = make_batches(&[10, 10, 10, 10, 200, 300, 300], 1 << 20, &buckets, None);
        assert_eq!(
            batches.iter().map(|b| (b.rows.clone(), b.bucket)).collect::<Vec<_>>(),
            vec![
                (vec![0, 1, 2], Bucket { max_length: 128, max_rows: Some(3) }),
                (vec![3], Bucket { max_length: 128, max_rows: Some(3) }),
                (vec![4], Bucket { max_length: 256, max_rows: Some(2) }),
                (vec![5], Bucket { max_length: 300, max_rows: Some(1) }),
                (vec![6], Bucket { max_length: 300, max_rows: Some(1) }),
            ]
        );
        assert!(make_batches(&[], 100, &buckets, None).is_empty());
    }

    #[test]
    fn an_unpadded_engine_counts_the_sum_of_the_lengths() {
        // shortest first: 10, 20, 25, 30. Unpadded 10 + 20 + 25 = 55 ≤ 60; padded 3 × 25 = 75
        let plans = plan_batches(&[30, 10, 20, 25], 60, &default_buckets(), None, false);
        assert_eq!(plan(&plans), vec![(vec![1, 2, 3], 128), (vec![0], 128)]);
        let plans = plan_batches(&[30, 10, 20, 25], 60, &default_buckets(), None, true);
        assert_eq!(plan(&plans), vec![(vec![1, 2], 128), (vec![3, 0], 128)]);
    }

    #[test]
    fn padded_right_with_the_pad_id_and_sep_logits_read_real_tokens_only() {
        let batch = FlatBatch::from_rows([&[5i64, 4, 7, 4][..], &[4, 9][..]]);
        assert_eq!(batch.lengths(), vec![4, 2]);
        let padded = batch.padded(2, None).unwrap();
        assert_eq!(padded.input_ids, vec![5, 4, 7, 4, 4, 9, 2, 2]);
        assert_eq!(padded.attention_mask, vec![1, 1, 1, 1, 1, 1, 0, 0]);
        assert_eq!(batch.padded(2, Some(5)).unwrap().input_ids, vec![5, 4, 7, 4, 2, 4, 9, 2, 2, 2]);
        assert!(batch.padded(2, Some(3)).is_err());
        // logits = position index per label, so the picked positions show
        let data: Vec<f32> = (0..16).map(|i| i as f32).collect();
        let logits = Logits { rows: 2, length: 4, labels: 2, data };
        // a pad id equal to sep must not be read: pad 4 here
        let padded = batch.padded(4, None).unwrap();
        let picked = sep_logits(&logits, &padded.input_ids, &batch.lengths(), 4);
        assert_eq!(picked, vec![vec![2.0, 3.0, 6.0, 7.0], vec![8.0, 9.0]]);
    }

    #[test]
    fn offsets_are_checked() {
        assert!(FlatBatch::new(vec![1, 2, 3], vec![0, 2, 3]).is_ok());
        assert!(FlatBatch::new(vec![1, 2, 3], vec![0, 2]).is_err());
        assert!(FlatBatch::new(vec![1, 2, 3], vec![1, 3]).is_err());
        assert!(FlatBatch::new(vec![1, 2, 3], vec![0, 3, 2, 3]).is_err());
    }

    /// A batch of chunks of 3 and 2 tokens: side by side, the positions restarting per chunk,
    /// the offsets and each token's place in the chunks padded to the longest, and the SEP
    /// logits read from each chunk's own places.
    #[test]
    fn chunks_are_packed_side_by_side_with_their_offsets_and_places() {
        let batch = FlatBatch::from_rows([&[5i64, 4, 7][..], &[9, 4][..]]);
        let call = pack(&batch, 2, None).unwrap();
        assert_eq!(call.input_ids, vec![5, 4, 7, 9, 4]);
        assert_eq!(call.position_ids, vec![0, 1, 2, 0, 1]);
        assert_eq!(call.cumulative_seq_lengths, vec![0, 3, 5]);
        // [2 rows, 3 columns]: real tokens' places 0 1 2 | 3 4, then the padding's, 5
        assert_eq!(call.token_offset, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!((call.rows, call.longest, call.chunks), (2, 3, 2));
        let data: Vec<f32> = (0..10).map(|i| i as f32).collect();
        let logits = Logits { rows: 1, length: 5, labels: 2, data };
        assert_eq!(packed_sep_logits(&logits, &call, 4), vec![vec![2.0, 3.0], vec![8.0, 9.0]]);
    }

    /// A fixed shape: the tokens filled up with rows of pad ids no longer than the longest
    /// (their own chunks, positions from 0), then empty rows; what does not fit is refused.
    #[test]
    fn a_fixed_shape_is_filled_with_rows_of_padding_and_empty_rows() {
        let batch = FlatBatch::from_rows([&[5i64, 4, 7][..], &[9, 4][..]]);
        let shape = PackShape { tokens: 12, rows: 6, longest: 4 };
        let call = pack(&batch, 2, Some(shape)).unwrap();
        assert_eq!(call.input_ids, vec![5, 4, 7, 9, 4, 2, 2, 2, 2, 2, 2, 2]);
        assert_eq!(call.position_ids, vec![0, 1, 2, 0, 1, 0, 1, 2, 3, 0, 1, 2]);
        assert_eq!(call.cumulative_seq_lengths, vec![0, 3, 5, 9, 12, 12, 12]);
        assert_eq!(call.token_offset.len(), 6 * 4);
        assert_eq!(call.token_offset[..12], [0, 1, 2, 4, 5, 8, 9, 10, 11, 12, 13, 14]);
        assert_eq!(call.token_offset[12..], [3, 6, 7, 15, 16, 17, 18, 19, 20, 21, 22, 23]);
        assert_eq!(call.chunks, 2);
        for (tight, message) in [
            (
                PackShape { tokens: 4, rows: 6, longest: 4 },
                "does not fit a packed call of 6 chunks of at most 4 tokens, 4 in all",
            ),
            (
                PackShape { tokens: 12, rows: 6, longest: 2 },
                "does not fit a packed call of 6 chunks of at most 2 tokens, 12 in all",
            ),
            (
                PackShape { tokens: 12, rows: 3, longest: 4 },
                "a packed call of 3 chunks cannot hold 2 chunks and 2 rows of filler",
            ),
        ] {
            assert!(pack(&batch, 2, Some(tight)).unwrap_err().0.ends_with(message), "{tight:?}");
        }
    }

    /// Every batch the packed buckets cut fits its bucket's fixed shape, whatever the lengths.
    #[test]
    fn every_packed_batch_fits_its_buckets_shape() {
        for tokens in [2048, 16384, 65536] {
            let buckets = packed_buckets(tokens);
            let mut lengths: Vec<usize> = (1..=8192).step_by(13).collect();
            lengths.extend(std::iter::repeat_n(1, 5000));
            lengths.extend([128, 129, 8192, 8192, 4097]);
            for plan in plan_batches(&lengths, tokens, &buckets, None, false) {
                let rows: Vec<&[i64]> = plan.rows.iter().map(|&i| &[3i64; 8192][..lengths[i]]).collect();
                let batch = FlatBatch::from_rows(rows);
                let shape = packed_shape(&plan.bucket, tokens);
                let call = pack(&batch, 0, Some(shape)).unwrap();
                assert_eq!(
                    (call.input_ids.len(), call.cumulative_seq_lengths.len()),
                    (shape.tokens, shape.rows + 1)
                );
            }
        }
    }
}
