"""Training the embedded default model: labels from ground truth, tokenizer, model, bundle."""
