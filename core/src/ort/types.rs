//! The values the ONNX Runtime layer passes between its modules, with no behaviour beyond
//! reading themselves: its error, a model call's logits, and the batcher's buckets, plans and
//! flat batches. A leaf: it imports nothing of `ort`, so `batches` (which cuts and pads),
//! `gpu` (which sizes TensorRT's profiles to the buckets) and `engine` (which runs the
//! batches) all read these types from here and none of them imports another to get them.

/// An error from ONNX Runtime or from this layer, as one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrtError(pub String);

impl std::fmt::Display for OrtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OrtError {}

/// Logits `[rows, length, labels]`, row-major, as float32.
#[derive(Clone, Debug, PartialEq)]
pub struct Logits {
    pub rows: usize,
    pub length: usize,
    pub labels: usize,
    pub data: Vec<f32>,
}

impl Logits {
    /// The logits of token `position` of `row`.
    pub fn at(&self, row: usize, position: usize) -> &[f32] {
        let start = (row * self.length + position) * self.labels;
        &self.data[start..start + self.labels]
    }
}

/// Per row of a batch, the logits at its SEP tokens, `[n_sep × labels]` flattened.
#[derive(Clone, Debug, PartialEq)]
pub struct SepLogits {
    pub labels: usize,
    pub rows: Vec<Vec<f32>>,
}

/// `batches.Bucket`: rows of at most `max_length` tokens, at most `max_rows` per batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub max_length: usize,
    pub max_rows: Option<usize>,
}

/// One batch of `make_batches`: the indices of its rows (into the lengths given), shortest
/// first, and its bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchPlan {
    pub rows: Vec<usize>,
    pub bucket: Bucket,
}

/// `batches.Batch` without keys: the rows' token ids concatenated and
/// `cumulative_seq_lengths` (`rows + 1` offsets, starting at 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatBatch {
    pub input_ids: Vec<i64>,
    pub cumulative_seq_lengths: Vec<usize>,
}

/// `Batch.padded`'s result: `[rows, length]` row-major ids and mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Padded {
    pub rows: usize,
    pub length: usize,
    pub input_ids: Vec<i64>,
    pub attention_mask: Vec<i64>,
}

impl FlatBatch {
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = &'a [i64]>) -> FlatBatch {
        let mut batch = FlatBatch { input_ids: Vec::new(), cumulative_seq_lengths: vec![0] };
        for row in rows {
            batch.input_ids.extend_from_slice(row);
            batch.cumulative_seq_lengths.push(batch.input_ids.len());
        }
        batch
    }

    /// Checks the offsets: they start at 0, never decrease and end at the token count.
    pub fn new(input_ids: Vec<i64>, cumulative_seq_lengths: Vec<usize>) -> Result<FlatBatch, OrtError> {
        let ordered = cumulative_seq_lengths.windows(2).all(|w| w[0] <= w[1]);
        if cumulative_seq_lengths.first() != Some(&0)
            || !ordered
            || cumulative_seq_lengths.last() != Some(&input_ids.len())
        {
            return Err(OrtError(format!(
                "cumulative_seq_lengths must rise from 0 to the {} tokens",
                input_ids.len()
            )));
        }
        Ok(FlatBatch { input_ids, cumulative_seq_lengths })
    }

    pub fn rows(&self) -> usize {
        self.cumulative_seq_lengths.len() - 1
    }

    pub fn lengths(&self) -> Vec<usize> {
        self.cumulative_seq_lengths.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// The longest row (0 for no rows).
    pub fn max_length(&self) -> usize {
        self.lengths().into_iter().max().unwrap_or(0)
    }

    /// Token ids of row `index` (no padding).
    pub fn row(&self, index: usize) -> &[i64] {
        &self.input_ids[self.cumulative_seq_lengths[index]..self.cumulative_seq_lengths[index + 1]]
    }

    /// `Batch.padded(pad_id, length)`: rows right-padded with `pad_id` to `length` (None or
    /// 0: the longest row), mask 1 on real tokens. A `length` shorter than a row is an error
    /// (NumPy raises there too).
    pub fn padded(&self, pad_id: i64, length: Option<usize>) -> Result<Padded, OrtError> {
        let longest = self.max_length();
        let length = length.filter(|&n| n != 0).unwrap_or(longest);
        if length < longest {
            return Err(OrtError(format!("cannot pad rows of {longest} tokens to {length}")));
        }
        let rows = self.rows();
        let mut input_ids = vec![pad_id; rows * length];
        let mut attention_mask = vec![0i64; rows * length];
        for index in 0..rows {
            let row = self.row(index);
            let start = index * length;
            input_ids[start..start + row.len()].copy_from_slice(row);
            attention_mask[start..start + row.len()].fill(1);
        }
        Ok(Padded { rows, length, input_ids, attention_mask })
    }
}

/// The fixed shape of a packed model call (`batches::pack` pads a batch to it): `tokens`
/// side by side in one row, in `rows` chunks of at most `longest` tokens (`token_offset` is
/// `[rows, longest]`). A call of one shape can be captured once and replayed (CUDA graphs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PackShape {
    pub tokens: usize,
    pub rows: usize,
    pub longest: usize,
}

/// One packed model call (`batches::pack`): the chunks' tokens side by side in one row, the
/// positions restarting at 0 for every chunk, and ONNX Runtime's `PackedMultiHeadAttention`
/// layout of them: `cumulative_seq_lengths` (`rows + 1` offsets) and `token_offset`
/// (`[rows, longest]`: each token's place in the chunks padded to `longest`, the real tokens'
/// first, in order, then the padding's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedCall {
    pub input_ids: Vec<i64>,
    pub position_ids: Vec<i64>,
    pub cumulative_seq_lengths: Vec<i32>,
    pub token_offset: Vec<i32>,
    /// the rows of `token_offset`: the batch's chunks, filler and empty rows
    pub rows: usize,
    /// the columns of `token_offset`
    pub longest: usize,
    /// the batch's own chunks (the first rows)
    pub chunks: usize,
}
