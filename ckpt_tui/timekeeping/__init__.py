"""Time: the one injectable clock behind every displayed time, the one parser of typed dates,
and TTL math (expiry states, extending, how an expiry reads)."""
