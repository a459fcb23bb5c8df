"""Guidance learned from the engine's own code (issue 38, the fourth paper's method).

``collect`` takes the training data (models' features, the engine's blocks they ran per
module); ``predictor`` trains the graph network that predicts them and exports it to ONNX;
``policy`` trains the generator's block-choosing policy with TRPO against the predictor's test
value and exports it too.  Training needs PyTorch, PyG and sb3-contrib (the ``learn`` extra);
the fuzz loop reads only the exported files (search.learned, through ONNX Runtime).
"""
