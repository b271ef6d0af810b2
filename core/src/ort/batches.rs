//! Batches as `runtime/batches.py` makes them, so the C path groups and pads chunks exactly
//! as Python does: `make_batches` (length-sorted, greedy, under a padded-token budget and an
//! attention budget, never across a bucket), `FlatBatch` (`Batch`: rows concatenated plus
//! `cumulative_seq_lengths`), `FlatBatch::padded` (`Batch.padded`) and `sep_logits`
//! (`backends.sep_logits`).

use super::types::{BatchPlan, Bucket, Logits};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ort::types::FlatBatch;

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
}
