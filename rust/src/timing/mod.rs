//! `timing.json`: the model of one build and its lenient decoder.
