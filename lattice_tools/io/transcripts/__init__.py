"""Transcript formats: STM, CTM, alt-CTM, trn, GLM, Kaldi data directories, N-best lists of end-to-end
decoders (sherpa-onnx, ESPnet, NeMo, Kaldi, a generic TSV/JSONL) and format detection by content
(``detect``).
"""
