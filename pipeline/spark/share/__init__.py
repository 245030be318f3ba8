"""The share coordinator's state (`__share_group_state`) replayed in Spark."""
