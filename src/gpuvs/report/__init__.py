"""Everything drawn for a person, and the `--format json` documents for a script: how each
kind of run is shown (`views`), its tables (`layout`, `verdict`, `seed_tables`,
`dist_tables`, `history`, `predicted`, `resources`), plots (`plots`, `draw`,
`dist_plots`), the pages (`html`, `pages`, from `sections`), the console, markdown and
`progress`, and the documents (`documents`)."""
