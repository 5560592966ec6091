"""Tools built on the library: batch runs (``ptxopt batch``) and HTML reports
(``ptxopt report``)."""
