//! CLI tests (filled in below).
