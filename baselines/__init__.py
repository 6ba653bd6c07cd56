"""Baselines for SituatedQA (Zhang & Choi, EMNLP 2021): DPR, BART and identification runners.

Heavy dependencies (torch, transformers, faiss, scikit-learn) are imported lazily inside
the runner modules, so importing this package stays cheap; install them with the
``baselines`` extra.
"""

__version__ = "0.1.0"
