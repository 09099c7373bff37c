"""The provider cache's room: the cache file itself (:mod:`minbw.cache.providers`) and its safety check
(:mod:`minbw.cache.check`, pure)."""
