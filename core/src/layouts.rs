//! For the Python binding (`runtime/binding.py`): the headers' text the library was built
//! with (`pulpie_rt_py_header`) and the layout of every struct they declare, as this library
//! lays it out (`pulpie_rt_py_layouts`), so `tests/test_binding.py` checks each struct's size
//! and field offsets against the compiled code. No module imports this one.

use crate::capi::{pulpie_rt_extract_options, pulpie_rt_options, pulpie_rt_py_result_view};
use crate::engine::ffi::{
    pulpie_rt_decoding, pulpie_rt_prepare_options, pulpie_rt_sep_outputs, FinishOutput, PrepareOutput,
};
use crate::ort::ffi::{OrtBatches, OrtFloats, OrtMessage};
use crate::{DecodeOutput, FeaturesOutput, SimplifyOutput, TextOutput, TokenIdsOutput, TokenizerLoadOutput};
use std::ffi::c_char;
use std::fmt::Write;
use std::sync::OnceLock;

/// Both headers, NUL-terminated.
static HEADER: &str = concat!(
    include_str!("../include/pulpie_rt.h"),
    "\n",
    include_str!("../include/pulpie_rt_internal.h"),
    "\0"
);

fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// "name size\n", then " field offset size\n" per field, for each struct the headers
/// declare (by its C name).
macro_rules! layouts {
    ($($c_name:literal => $rust:ty { $($field:ident),* $(,)? })*) => {{
        let mut text = String::new();
        $(
            let _ = writeln!(text, "{} {}", $c_name, std::mem::size_of::<$rust>());
            $(
                let _ = writeln!(
                    text,
                    " {} {} {}",
                    stringify!($field),
                    std::mem::offset_of!($rust, $field),
                    size_of_field(|s: &$rust| &s.$field)
                );
            )*
        )*
        text.push('\0');
        text
    }};
}

fn layouts() -> String {
    layouts! {
        "pulpie_rt_options" => pulpie_rt_options {
            struct_size, model, backend, device_id, threads, ort_library, max_input_bytes,
            max_page_tokens, max_batch_tokens, profile, cutoff_length, favor, metadata,
        }
        "pulpie_rt_extract_options" => pulpie_rt_extract_options { struct_size, favor, page_favor }
        "pulpie_rt_message" => OrtMessage { ptr, len }
        "pulpie_rt_simplify_output" => SimplifyOutput {
            simplified_ptr, simplified_len, map_ptr, map_len, reason,
        }
        "pulpie_rt_text_output" => TextOutput { ptr, len, reason }
        "pulpie_rt_decode_output" => DecodeOutput { text_ptr, text_len, encoding, source, reason }
        "pulpie_rt_tokenizer_load_output" => TokenizerLoadOutput { handle, error_ptr, error_len }
        "pulpie_rt_token_ids_output" => TokenIdsOutput { ptr, len, reason }
        "pulpie_rt_features_output" => FeaturesOutput { ptr, len, rows, cols, reason }
        "pulpie_rt_prepare_options" => pulpie_rt_prepare_options {
            struct_size, max_input_bytes, max_page_tokens, cutoff_length, max_tokens, sep_id,
            bos_id, eos_id, features, segmentation,
        }
        "pulpie_rt_prepare_output" => PrepareOutput {
            ids_ptr, ids_len, id_lens_ptr, n_blocks, token_ids_ptr, token_ids_len,
            token_ends_ptr, block_indices_ptr, block_indices_len, block_ends_ptr, n_chunks,
            map_ptr, map_len, features_ptr, features_len, n_features, truncated_ptr,
            truncated_len, n_classified,
        }
        "pulpie_rt_decoding" => pulpie_rt_decoding {
            struct_size, margins, has_threshold, threshold, keep_best, expected_f1,
            has_container_prior, container_prior, has_story_prior, story_prior,
            continue_story, has_short_story, short_story,
        }
        "pulpie_rt_sep_outputs" => pulpie_rt_sep_outputs {
            struct_size, n_blocks, block_indices, block_ends, n_chunks, kind, values,
            value_ends, labels, features, n_features, n_classified,
        }
        "pulpie_rt_finish_output" => FinishOutput {
            html_ptr, html_len, markdown_ptr, markdown_len, empty_reason,
        }
        "pulpie_rt_floats" => OrtFloats { ptr, len, labels }
        "pulpie_rt_batches" => OrtBatches {
            order_ptr, order_len, ends_ptr, bucket_lengths_ptr, bucket_rows_ptr, batches,
        }
        "pulpie_rt_py_result_view" => pulpie_rt_py_result_view {
            markdown, markdown_len, html, html_len, error, truncated, empty_reason, encoding,
            label_ids, label_ids_len, label_main, n_labels, label_scores, threshold,
            label_ids, label_ids_len, label_main, n_labels, title, authors, authors_len, published,
            modified, site_name, language, canonical_url, description,
        }
    }
}

/// `pulpie_rt.h` and `pulpie_rt_internal.h` as this library was built with them.
#[no_mangle]
pub extern "C" fn pulpie_rt_py_header() -> *const c_char {
    HEADER.as_ptr() as *const c_char
}

/// The layout of every struct the headers declare, as this library lays it out.
#[no_mangle]
pub extern "C" fn pulpie_rt_py_layouts() -> *const c_char {
    static LAYOUTS: OnceLock<String> = OnceLock::new();
    LAYOUTS.get_or_init(layouts).as_ptr() as *const c_char
}
