//! Prints the configuration reference table of `docs/configuration.md`.

#[allow(clippy::print_stdout)]
fn main() {
    print!("{}", ramen_config::reference::markdown_table());
}
