"""ONNX lowerings of the recurrent layer ops (RNN, LSTM, GRU), with ember's gate order mapped to ONNX's."""

LOWERINGS: dict = {}
