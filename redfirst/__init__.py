"""redfirst: gates, mutations, leases and checkers whose green means something.

One import package; its four parts are the subpackages `redfirst.gates`, `redfirst.mutations`,
`redfirst.leases` and `redfirst.checkers`, over the layer they share in `redfirst` itself.
"""
