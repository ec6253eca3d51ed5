"""The sandbox control plane: a protocol-faithful Kubernetes API server for tests and `vk-provider sandbox`.

Laid out by the parts of a real control plane (upstream names in parentheses):

- `server.py` wires everything into one aiohttp application; `command.py` is the `vk-provider
  sandbox` subcommand; `bootstrap.py` the objects a fresh cluster has; `kubeconfig.py` the file
  clients read; `real/` runs the upstream components instead (`--control-plane real`).
- `storage/`: the object store with its watch log (`store.py`; apiserver `pkg/registry/generic/
  registry`, `pkg/storage`) and the label/field selectors it filters by (`selectors.py`).
- `api/`: everything between HTTP and the store (apiserver `pkg/endpoints`, apimachinery).
  The vocabulary: `errors.py` (metav1.Status errors), `resources.py` (the kinds served),
  `requestinfo.py`, `quantity.py`; `decoding.py` reads request bodies and write options,
  `off_loop.py` works on a big request object in a thread (a small one on the loop),
  `responses.py` writes JSON, Status and Table answers. Rules: `protobuf.py` (with its generated
  field table `protobuf_schema.json`, tools/protoschema), `patch.py`, `defaults.py`
  (defaulting, admission, PrepareForCreate), `dynamic_resources.py` (the resource.k8s.io kinds'
  defaults, strategies and immutable fields), `runtime_class_admission.py` (the RuntimeClass
  admission's overhead and scheduling), `validation/` (`names.py` name and label formats,
  `field.py` field errors, `schema.py` the official schemas and the walk against them, `kinds.py`
  the per-kind rules, `handlers.py` probe and hook handlers, `sysctls.py`, `pod_paths.py`,
  `resize.py` the pods/resize strategy, validation and admission).
  Endpoints: `handlers/` (`dispatch.py` routes to `reads.py`, `verbs.py`, `watch.py`,
  `subresources.py`, `auth.py`), `discovery.py`, `openapi.py`, `tables.py` (with `table_columns.py`
  and `tables_dra.py`), `metrics.py`
  (metrics.k8s.io), `kubelet_proxy.py` (logs/exec/attach/port-forward to a kubelet),
  `pod_proxy.py` (pods/proxy to a pod's address), and the
  middlewares `request_guard.py` and `debug.py`.
- `controllers/`: the kube-controller-manager and kube-scheduler loops over the store
  (`scheduler.py` with its pure `scheduler_filters.py`, `node_lifecycle.py`, `csr_signer.py`,
  `compactor.py` the etcd compactor's ticks).
- `pki/`: the sandbox CA and its certificates (`authority.py`) and service account tokens
  (`tokens.py`).

storage/ and controllers/ use only the vocabulary of api/ (errors, resources, quantity,
validation's names and field errors), never its handlers. This package imports nothing of
`vk_provider` (only `vk_common`, the ground floor both share: logging, tasks, the Kubernetes
version, the guarded listener, the host's address, the provider nodes' taint), and the provider
never imports it: they meet only over HTTP (tests/unit/test_package_layers.py).
"""
