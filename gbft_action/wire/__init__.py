"""How the host and its worker processes talk (layer 0 of ``gbft_action.LAYERS``): arrays over
the pipe (``arrays``) and the fork server that starts workers (``zygote``); the standard library
only, since both sides of the pipe import it."""
