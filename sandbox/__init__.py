"""Running untrusted PyTorch snippets and classifying what they do."""
