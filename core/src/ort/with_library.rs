//! Tests that need ONNX Runtime itself: ignored by a plain `cargo test` (no library on a
//! build machine), run with
//! `PULPIE_RT_ORT_LIB=…/onnxruntime/capi/libonnxruntime.so.1.32.0 cargo test -- --ignored`.
//! They read the embedded default model from `pulpie_rt/default_model/`.

use super::*;
use std::path::PathBuf;
use std::sync::Arc;

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../pulpie_rt/default_model")
}

fn ort() -> Arc<Ort> {
    Ort::load(None).expect("set PULPIE_RT_ORT_LIB to an ONNX Runtime library for the ignored tests")
}

fn one_thread() -> SessionConfig {
    SessionConfig { intra_op_threads: 1, inter_op_threads: 1, provider: ExecutionProvider::Cpu }
}

/// Two rows of real-looking ids (bos 0, sep 4, eos 1 as in the default model's manifest).
fn batch() -> FlatBatch {
    let first: Vec<i64> = [0, 812, 93, 4, 1500, 77, 4, 9000, 4, 1].to_vec();
    let second: Vec<i64> = [0, 31, 4, 16000, 5, 4, 1].to_vec();
    FlatBatch::from_rows([&first[..], &second[..]])
}

#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn the_library_reports_its_version_and_cpu_provider() {
    let ort = ort();
    assert!(ort.library().version().starts_with("1."), "{}", ort.library().version());
    assert!(ort.available_providers().unwrap().iter().any(|p| p == "CPUExecutionProvider"));
}

#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn a_model_from_a_file_and_from_bytes_gives_the_same_logits() {
    let ort = ort();
    let path = model_dir().join("model.onnx");
    let bytes = std::fs::read(&path).unwrap();
    let from_file = TokenClassifier::open(&ort, ModelSource::File(&path), &one_thread(), None).unwrap();
    let from_bytes = TokenClassifier::open(&ort, ModelSource::Bytes(&bytes), &one_thread(), None).unwrap();
    let padded = batch().padded(2, None).unwrap();
    let a = from_file.run(&padded.input_ids, &padded.attention_mask, padded.rows, padded.length).unwrap();
    let b = from_bytes.run(&padded.input_ids, &padded.attention_mask, padded.rows, padded.length).unwrap();
    assert_eq!((a.rows, a.length, a.labels), (2, 10, 2));
    assert!(a.data.iter().all(|v| v.is_finite()));
    assert_eq!(a, b);
    let sep = from_file.predict(&batch(), 2, 4).unwrap();
    assert_eq!(sep.rows.iter().map(|r| r.len() / 2).collect::<Vec<_>>(), vec![3, 2]);
    assert_eq!(sep.rows[0][..2], *a.at(0, 3));
}

#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn one_session_runs_from_several_threads_at_once() {
    let ort = ort();
    let path = model_dir().join("model.onnx");
    let classifier = TokenClassifier::open(&ort, ModelSource::File(&path), &one_thread(), None).unwrap();
    let expected = classifier.predict(&batch(), 2, 4).unwrap();
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| {
                scope
                    .spawn(|| (0..5).map(|_| classifier.predict(&batch(), 2, 4).unwrap()).collect::<Vec<_>>())
            })
            .collect();
        for run in runs {
            for got in run.join().unwrap() {
                assert_eq!(got, expected);
            }
        }
    });
}

#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn gpu_providers_missing_from_the_library_are_named() {
    let ort = ort();
    let available = ort.available_providers().unwrap();
    if available.iter().any(|p| p == "CUDAExecutionProvider") {
        return; // a GPU build: nothing to refuse
    }
    let path = model_dir().join("model.onnx");
    for (provider, name, missing) in [
        (ExecutionProvider::Cuda { device_id: 0 }, "cuda", "CUDAExecutionProvider"),
        (ExecutionProvider::TensorRt { device_id: 1 }, "tensorrt", "TensorrtExecutionProvider"),
    ] {
        let config = SessionConfig { provider, ..one_thread() };
        let error = TokenClassifier::open(&ort, ModelSource::File(&path), &config, None).err().unwrap();
        assert_eq!(
            error.0,
            format!(
                "execution provider '{name}' is not available: the ONNX Runtime library {} (version \
                 {}) has no {missing} (it has: {}); point PULPIE_RT_ORT_LIB at the \
                 libonnxruntime.so of a GPU build (the onnxruntime-gpu wheel's \
                 onnxruntime/capi/libonnxruntime.so.<version>)",
                ort.library().path(),
                ort.library().version(),
                available.join(", ")
            )
        );
    }
}

#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn bad_models_and_inputs_are_refused_with_their_reason() {
    let ort = ort();
    let not_onnx = std::env::temp_dir().join(format!("pulpie-rt-not-onnx-{}.onnx", std::process::id()));
    std::fs::write(&not_onnx, b"<html>not a model</html>").unwrap();
    let error = TokenClassifier::open(&ort, ModelSource::File(&not_onnx), &one_thread(), None).err().unwrap();
    std::fs::remove_file(&not_onnx).unwrap();
    let prefix = format!("ONNX Runtime cannot load {}: ", not_onnx.display());
    assert!(error.0.starts_with(&prefix), "{}", error.0);
    assert!(error.0.contains("Protobuf parsing failed"), "{}", error.0);
    let error =
        TokenClassifier::open(&ort, ModelSource::Bytes(b"<html>not a model</html>"), &one_thread(), None)
            .err()
            .unwrap();
    assert!(error.0.starts_with("ONNX Runtime cannot load the 24-byte model in memory: "), "{}", error.0);
    assert!(error.0.contains("protobuf parsing failed"), "{}", error.0);

    let missing = model_dir().join("no-such-model.onnx");
    let error = TokenClassifier::open(&ort, ModelSource::File(&missing), &one_thread(), None).err().unwrap();
    assert!(error.0.starts_with(&format!("ONNX Runtime cannot load {}: ", missing.display())), "{}", error.0);

    // the rescorer is a valid model with the wrong interface for a classifier
    let rescorer = model_dir().join("rescorer.onnx");
    let error = TokenClassifier::open(&ort, ModelSource::File(&rescorer), &one_thread(), None).err().unwrap();
    assert_eq!(
        error.0,
        format!(
            "{}: model input 'features' is none of the inputs pulpie-rt feeds (input_ids, \
             attention_mask, position_ids, cumulative_sequence_length, token_offset); the model's \
             inputs: features",
            rescorer.display()
        )
    );
    let model = model_dir().join("model.onnx");
    let error =
        TokenClassifier::open(&ort, ModelSource::File(&model), &one_thread(), Some("scores")).err().unwrap();
    assert_eq!(
        error.0,
        format!("{}: model has no output 'scores' (the model's outputs: logits)", model.display())
    );
    let classifier = TokenClassifier::open(&ort, ModelSource::File(&model), &one_thread(), None).unwrap();
    let error = classifier.run(&[1, 2, 3], &[1, 1, 1], 2, 2).err().unwrap();
    assert_eq!(error.0, "input_ids holds 3 values, not rows × length = 2 × 2");
}

#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn the_rescorer_gives_probabilities_and_checks_its_width() {
    let ort = ort();
    let path = model_dir().join("rescorer.onnx");
    let rescorer = BlockRescorer::open(&OrtOnDemand::loaded(&ort), ModelSource::File(&path), 0.25).unwrap();
    let features: Vec<f32> = (0..3 * 166).map(|i| (i % 7) as f32 * 0.5).collect();
    let probabilities = rescorer.probabilities(&features, 3).unwrap();
    for pair in probabilities.chunks_exact(2) {
        assert!((pair[0] + pair[1] - 1.0).abs() < 1e-5, "{pair:?}");
    }
    let scores = rescorer.scores(&features, 3, &[1.0, f32::NAN, -2.0]).unwrap();
    let odds = rescorer.log_odds(&features, 3).unwrap();
    assert_eq!(scores, combine(&odds, 0.25, &[1.0, f32::NAN, -2.0]));
    assert_eq!(rescorer.log_odds(&[], 0).unwrap(), Vec::<f32>::new());
    let error = rescorer.probabilities(&[0.0; 6], 2).err().unwrap();
    assert_eq!(error.0, "features have 3 columns, the rescorer reads 166");
}

/// What `valgrind` runs: a few batches and the rescorer, everything dropped before exit.
/// `cargo test --no-run` names the test executable, then
/// `PULPIE_RT_ORT_LIB=… valgrind --leak-check=full --show-leak-kinds=all
/// target/debug/deps/pulpie_rt_core-<hash> --ignored --exact ort::with_library::valgrind_driver`.
#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn valgrind_driver() {
    let ort = ort();
    let classifier =
        TokenClassifier::open(&ort, ModelSource::File(&model_dir().join("model.onnx")), &one_thread(), None)
            .unwrap();
    let rescorer = BlockRescorer::open(
        &OrtOnDemand::loaded(&ort),
        ModelSource::File(&model_dir().join("rescorer.onnx")),
        0.25,
    )
    .unwrap();
    for round in 0..3i64 {
        let rows: Vec<Vec<i64>> = (0..3)
            .map(|r| {
                (0..(20 + 7 * r + round)).map(|t| if t % 5 == 4 { 4 } else { (t * 37 + r) % 16384 }).collect()
            })
            .collect();
        let batch = FlatBatch::from_rows(rows.iter().map(Vec::as_slice));
        let sep = classifier.predict(&batch, 2, 4).unwrap();
        let margins: Vec<f32> = sep.rows[0].chunks_exact(2).map(|l| l[1] - l[0]).collect();
        let features = vec![0.25f32; margins.len() * 166];
        let scores = rescorer.scores(&features, margins.len(), &margins).unwrap();
        assert_eq!(scores.len(), margins.len());
    }
    drop(rescorer);
    drop(classifier);
    drop(ort);
}

/// The provider slots themselves (table positions 170-174 and 204-208) answer: a CPU build
/// refuses with ONNX Runtime's own message rather than crashing on a wrong slot.
#[test]
#[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
fn a_cpu_build_refuses_gpu_providers_through_their_own_entry_points() {
    let ort = ort();
    if ort.available_providers().unwrap().iter().any(|p| p == "CUDAExecutionProvider") {
        return;
    }
    let mut options = SessionOptions::new(&ort).unwrap();
    let device = [("device_id".to_string(), "0".to_string())];
    let cuda = options.append_cuda(&device).err().unwrap();
    assert!(cuda.0.contains("CUDA execution provider is not enabled in this build"), "{}", cuda.0);
    let tensorrt = options.append_tensorrt(&device).err().unwrap();
    assert!(
        tensorrt.0.contains("TensorRT execution provider is not enabled in this build"),
        "{}",
        tensorrt.0
    );
}
