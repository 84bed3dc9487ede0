//! CUDA graphs and the capturable optimizer step on a machine without a
//! GPU: `cuda::graph` on a CPU engine is a clear error that runs nothing,
//! and the optimizers' device-side step count gives the same updates as
//! host step numbers. (Replays against eager runs are `kiln-check --group
//! graphs` on a GPU.)

use kiln::{Device, Interpreter};

fn cpu() -> Interpreter {
    Interpreter::builder().device(Device::Cpu).build().unwrap()
}

#[test]
fn a_graph_on_a_cpu_engine_is_a_clear_error_before_the_block_runs() {
    let mut k = cpu();
    let err = k
        .run("let ran = [0]; cuda::graph(|| { ran[0] = 1; 2 })", "graph")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cuda::graph: this engine runs on the cpu, and a graph records GPU work"),
        "{err}"
    );
    let err = k
        .run("cuda::graph(|| 1, #{warm: true})", "graph")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown option 'warm' (expected inputs, warmup)"),
        "{err}"
    );
    assert!(!k.eval::<bool>("cuda::is_capturing()").unwrap());
    // the engine is fine afterwards
    assert_eq!(k.eval::<f64>("(ones([3]) * 2.0).sum().item()").unwrap(), 6.0);
}

#[test]
fn step_counts_as_tensors_give_the_updates_of_step_numbers() {
    let mut k = cpu();
    let v: rhai::Array = k
        .eval(
            r#"
            let run = |counted| {
                seed(4);
                let p = [randn([7]), randn([3, 2])];
                let m = [optimizer_state(p[0]), optimizer_state(p[1])];
                let v = [optimizer_state(p[0]), optimizer_state(p[1])];
                let b = [optimizer_state(p[0]), optimizer_state(p[1])];
                let q = [p[0].clone(), p[1].clone()];
                let count = zeros([1], #{dtype: "i64"});
                for step in 1..4 {
                    let g = [randn([7]), randn([3, 2])];
                    count += 1;
                    let opts = #{lr: 0.1, weight_decay: 0.01, decoupled: true};
                    adam_step_multi_(p, g, m, v, if counted { count } else { step }, opts);
                    let s = #{lr: 0.05, momentum: 0.9};
                    if counted { s.step = count; } else { s.init_buffer = step == 1; }
                    sgd_step_multi_(q, g, b, s);
                }
                cat([p[0], p[1].reshape([-1]), q[0], q[1].reshape([-1])], 0).to_list()
            };
            [run.call(false), run.call(true)]
            "#,
        )
        .unwrap();
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", v[1]));
    // the stdlib counts on the parameters' device and reports its steps
    let steps: i64 = k
        .eval(
            r#"
            import "nn" as nn;
            import "optim" as optim;
            let model = nn::linear(3, 2);
            let opt = optim::adamw(nn::parameters(model));
            for i in 0..4 {
                optim::zero_grad(opt);
                nn::apply(model, ones([5, 3])).sum().backward();
                optim::step(opt);
            }
            optim::steps(opt)
            "#,
        )
        .unwrap();
    assert_eq!(steps, 4);
    let err = k
        .run(
            "adam_step_multi_([ones([2])], [ones([2])], [zeros([2])], [zeros([2])], ones([2], #{dtype: \"i64\"}), #{})",
            "count",
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the step count must be a one-element integer tensor, got [2] i64"),
        "{err}"
    );
}
