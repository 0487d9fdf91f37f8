#!/usr/bin/python3
"""test_overwrite_power_loss_slog.py - test_overwrite_power_loss.py with
--small-object-log: the inline shards are in the drives' log segments, the
records name them; a power loss in the middle of the group commits loses
no acknowledged write and shows no record whose log bytes were not synced.

Needs root, losetup, mkfs.ext4 and mount; without them it exits 77.
Runs with /usr/bin/python3.
"""

from test_overwrite_power_loss import main

if __name__ == "__main__":
    main(["--small-object-log", "--small-object-log-segment-mb", "1"])
