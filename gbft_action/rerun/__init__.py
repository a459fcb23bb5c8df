"""Work over a lane after the loop (layer 4 of ``gbft_action.LAYERS``): diagnosing a failure
(minimised, its operator re-run alone: ``diagnose``) and replaying a bundle on a build
(``replay``)."""
