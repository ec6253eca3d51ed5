"""Static pods: manifest files on the node, parsed and defaulted like the kubelet's file source."""
