"""The exporter's machinery (``minbw exporter``; the use case :mod:`minbw.usecases.exporter` is its entry): the
collection (:mod:`~minbw.exporter.collector`), its rendering kept between collections
(:mod:`~minbw.exporter.exposition`), and the threads and the HTTP server (:mod:`~minbw.exporter.loops`)."""
