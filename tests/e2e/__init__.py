"""The built collector as a process against an OTLP sink, on the corpus builds."""
