package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// vectors writes, for objects that exercise every kind of field (pointers to zero values,
// inline members, maps of quantities, int-or-strings, times, bytes), <name>.pb as a client-go
// protobuf client sends it and <name>.json as a JSON client's json.Marshal gives it: the unit
// tests decode the one and compare it with the other, and the fidelity scenarios send the pod and
// the delete options to both control planes.
func vectors(scheme *runtime.Scheme, dir string) {
	zero, no, yes := int64(0), false, true
	background := metav1.DeletePropagationBackground
	always := corev1.ContainerRestartPolicyAlways
	at := metav1.Unix(1767225600, 0)
	micro := metav1.NewMicroTime(at.Add(123456789))
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			// The fidelity scenarios' mark and a scheduler nobody runs (tests/support/fidelity).
			Name: "fid-protobuf", Labels: map[string]string{"fidelity": "yes", "a": "b"},
			Annotations: map[string]string{"empty": ""},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 "fidelity-none",
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  &no,
			HostNetwork:                   false,
			NodeSelector:                  map[string]string{"k": "v"},
			Volumes: []corev1.Volume{
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(64<<20, resource.BinarySI)}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
					Items:                []corev1.KeyToPath{{Key: "k", Path: "p", Mode: new(int32)}}}}},
			},
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "busybox", RestartPolicy: &always}},
			Containers: []corev1.Container{{
				Name: "c", Image: "busybox", Command: []string{"sh", "-c", "sleep 1"},
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "E", Value: ""}, {Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")},
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds:    1,
					FailureThreshold: 0,
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: &zero, Privileged: &no, AllowPrivilegeEscalation: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}},
			}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &zero}},
		},
		Status: corev1.PodStatus{StartTime: &at, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
	}
	objects := map[string]runtime.Object{
		"pod": pod,
		"deleteoptions": &metav1.DeleteOptions{
			TypeMeta:           metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
			GracePeriodSeconds: &zero,
			PropagationPolicy:  &background,
			DryRun:             []string{"All"},
		},
		"event": &corev1.Event{
			TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"},
			Reason:         "Started", Count: 1, FirstTimestamp: at, EventTime: micro,
			Series: &corev1.EventSeries{Count: 2, LastObservedTime: micro},
		},
		"lease": &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns"},
			// A time of year 1, as upstream's Lease API conformance spec sends (time.Time{}.Add(2s)).
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: new(string), RenewTime: &micro,
				AcquireTime: &metav1.MicroTime{Time: time.Time{}.Add(2 * time.Second)},
			},
		},
		"secret": &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Data:       map[string][]byte{"k": {0, 1, 255}, "empty": {}},
			Type:       corev1.SecretTypeOpaque,
		},
		"eviction": &policyv1.Eviction{
			TypeMeta:      metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
			ObjectMeta:    metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &zero},
		},
		"binding": &corev1.Binding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "n"},
		},
	}
	serializer := protobuf.NewSerializer(scheme, scheme)
	for name, obj := range objects {
		f, err := os.Create(filepath.Join(dir, name+".pb"))
		if err != nil {
			panic(err)
		}
		if err := serializer.Encode(obj, f); err != nil {
			panic(err)
		}
		f.Close()
		encoded, err := json.Marshal(obj)
		if err != nil {
			panic(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), append(encoded, '\n'), 0o644); err != nil {
			panic(err)
		}
	}
}
