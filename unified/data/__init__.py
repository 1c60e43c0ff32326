"""Data in: the Sample's sources — file readers, cells, other frameworks' layouts, human
labels, ``read_samples``, a RAG pipeline's answers (``pipeline``) — and data out to other
frameworks' formats (``convert``)."""
