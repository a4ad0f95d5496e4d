//! A local emulator of the platform's four API surfaces.

pub mod cli;
