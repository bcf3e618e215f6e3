//! 0.x compatibility (placeholder replaced below).
