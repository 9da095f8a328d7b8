-- A results store (schema 1): synth --per-class 2 --size 32; eval, challenge, and every probe of
-- timm:test_resnet, as bgbench wrote them at commit fe721be. Today's summaries of its rows must give
-- the metrics it holds (tests/test_stored_runs.py).
PRAGMA user_version=1;
BEGIN TRANSACTION;
CREATE TABLE challenge_bg (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bg_id TEXT NOT NULL,
    bg_class INTEGER NOT NULL,
    asr REAL NOT NULL,
    PRIMARY KEY (run_id, bg_id)
);
CREATE TABLE challenge_fg (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    clean_pred INTEGER NOT NULL,
    fooled INTEGER NOT NULL,
    pairs INTEGER NOT NULL,
    fooling_bg TEXT,
    fooling_pred INTEGER,
    PRIMARY KEY (run_id, image_id)
);
INSERT INTO "challenge_fg" VALUES(2,'01_square/synth_val_00003',1,8,1,1,'00_circle/synth_val_00000',8);
INSERT INTO "challenge_fg" VALUES(2,'06_diamond/synth_val_00012',6,8,1,1,'08_bar/synth_val_00017',2);
INSERT INTO "challenge_fg" VALUES(2,'05_star/synth_val_00010',5,0,1,1,'04_ring/synth_val_00009',0);
INSERT INTO "challenge_fg" VALUES(2,'03_cross/synth_val_00006',3,0,1,1,'00_circle/synth_val_00001',8);
INSERT INTO "challenge_fg" VALUES(2,'04_ring/synth_val_00009',4,0,1,1,'05_star/synth_val_00011',0);
INSERT INTO "challenge_fg" VALUES(2,'07_crescent/synth_val_00015',7,8,1,1,'08_bar/synth_val_00017',2);
INSERT INTO "challenge_fg" VALUES(2,'02_triangle/synth_val_00004',2,8,1,1,'03_cross/synth_val_00007',8);
INSERT INTO "challenge_fg" VALUES(2,'00_circle/synth_val_00001',0,8,1,1,'03_cross/synth_val_00007',2);
INSERT INTO "challenge_fg" VALUES(2,'01_square/synth_val_00002',1,8,1,1,'02_triangle/synth_val_00004',2);
INSERT INTO "challenge_fg" VALUES(2,'08_bar/synth_val_00016',8,2,1,1,'03_cross/synth_val_00006',2);
INSERT INTO "challenge_fg" VALUES(2,'06_diamond/synth_val_00013',6,8,1,1,'07_crescent/synth_val_00014',8);
INSERT INTO "challenge_fg" VALUES(2,'05_star/synth_val_00011',5,0,1,1,'01_square/synth_val_00003',2);
INSERT INTO "challenge_fg" VALUES(2,'03_cross/synth_val_00007',3,0,1,1,'06_diamond/synth_val_00012',8);
INSERT INTO "challenge_fg" VALUES(2,'04_ring/synth_val_00008',4,0,1,1,'06_diamond/synth_val_00013',8);
INSERT INTO "challenge_fg" VALUES(2,'07_crescent/synth_val_00014',7,8,1,1,'03_cross/synth_val_00006',2);
INSERT INTO "challenge_fg" VALUES(2,'02_triangle/synth_val_00005',2,2,1,1,'01_square/synth_val_00002',8);
INSERT INTO "challenge_fg" VALUES(2,'00_circle/synth_val_00000',0,1,1,1,'06_diamond/synth_val_00013',8);
INSERT INTO "challenge_fg" VALUES(2,'08_bar/synth_val_00017',8,2,1,2,'03_cross/synth_val_00006',2);
CREATE TABLE challenge_progress (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    pairs INTEGER NOT NULL
);
CREATE TABLE challenge_row (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    preds BLOB NOT NULL,
    PRIMARY KEY (run_id, image_id)
);
CREATE TABLE challenge_verified (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, image_id TEXT NOT NULL, lowest REAL, state TEXT NOT NULL, PRIMARY KEY (run_id, image_id));
CREATE TABLE metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    variant TEXT NOT NULL DEFAULT '',
    value REAL, lo REAL, hi REAL, n INTEGER,
    PRIMARY KEY (run_id, name, variant)
);
INSERT INTO "metrics" VALUES(1,'accuracy','original',5.55555555555555524716e-02,9.8751909783030972223e-03,2.57573007818725940865e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','only_bg_b',5.55555555555555524716e-02,9.8751909783030972223e-03,2.57573007818725940865e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','only_bg_t',1.11111111111111104943e-01,3.10195226456123906988e-02,3.27997651301788040179e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','no_fg',5.55555555555555524716e-02,9.8751909783030972223e-03,2.57573007818725940865e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','only_fg',1.11111111111111104943e-01,3.10195226456123906988e-02,3.27997651301788040179e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','mixed_same',5.55555555555555524716e-02,9.8751909783030972223e-03,2.57573007818725940865e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','mixed_rand',1.11111111111111104943e-01,3.10195226456123906988e-02,3.27997651301788040179e-01,18);
INSERT INTO "metrics" VALUES(1,'accuracy','mixed_next',1.66666666666666657414e-01,5.83657680586144589351e-02,3.92220381039157239833e-01,18);
INSERT INTO "metrics" VALUES(1,'bg_gap','',-5.55555555555555524716e-02,-2.22222222222222209886e-01,1.11111111111111104943e-01,18);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy','',0.0,0.0,1.75879223646657645296e-01,18);
INSERT INTO "metrics" VALUES(2,'clean_accuracy','',5.55555555555555524716e-02,9.8751909783030972223e-03,2.57573007818725940865e-01,18);
INSERT INTO "metrics" VALUES(2,'fooled','',18.0,NULL,NULL,18);
INSERT INTO "metrics" VALUES(2,'challenge_pairs','',20.0,NULL,NULL,NULL);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','00_circle',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','01_square',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','02_triangle',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','03_cross',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','04_ring',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','05_star',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','06_diamond',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','07_crescent',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(2,'challenge_accuracy_class','08_bar',0.0,NULL,NULL,2);
INSERT INTO "metrics" VALUES(3,'noise_acc_fg','0.5',1.11111111111111104943e-01,0.0,2.22222222222222209886e-01,18);
INSERT INTO "metrics" VALUES(3,'noise_acc_bg','0.5',5.55555555555555524716e-02,0.0,1.11111111111111104943e-01,18);
INSERT INTO "metrics" VALUES(3,'rfs','0.5',-3.33333333333333314829e-01,-1.0,1.0,18);
INSERT INTO "metrics" VALUES(3,'rfs','',-3.33333333333333314829e-01,-1.0,1.0,18);
INSERT INTO "metrics" VALUES(4,'saliency_precision','',NULL,NULL,NULL,0);
INSERT INTO "metrics" VALUES(4,'saliency_iou','',8.39750605622787350042e-13,7.60588811241198e-13,9.17511556994092869476e-13,4);
INSERT INTO "metrics" VALUES(4,'saliency_dice','',8.39750605622787350042e-13,7.60588811241198e-13,9.17511556994092869476e-13,4);
INSERT INTO "metrics" VALUES(4,'saliency_density_diff','',0.0,0.0,0.0,4);
INSERT INTO "metrics" VALUES(4,'saliency_coverage_25','',0.0,0.0,0.0,4);
INSERT INTO "metrics" VALUES(4,'saliency_coverage_50','',0.0,0.0,0.0,4);
INSERT INTO "metrics" VALUES(4,'saliency_coverage_75','',0.0,0.0,0.0,4);
INSERT INTO "metrics" VALUES(4,'saliency_ap','',0.125274658203125,1.13890329996744796292e-01,1.37163035074869765761e-01,4);
INSERT INTO "metrics" VALUES(4,'saliency_precision_image_mean','',NULL,NULL,NULL,0);
INSERT INTO "metrics" VALUES(4,'saliency_iou_image_mean','',8.99875524317346e-13,7.83874455040765360982e-13,1.01035700665501056605e-12,18);
INSERT INTO "metrics" VALUES(4,'saliency_dice_image_mean','',8.99875524317346e-13,7.83874455040765360982e-13,1.01035700665501056605e-12,18);
INSERT INTO "metrics" VALUES(4,'saliency_density_diff_image_mean','',0.0,0.0,0.0,18);
INSERT INTO "metrics" VALUES(4,'saliency_coverage_25_image_mean','',0.0,0.0,0.0,18);
INSERT INTO "metrics" VALUES(4,'saliency_coverage_50_image_mean','',0.0,0.0,0.0,18);
INSERT INTO "metrics" VALUES(4,'saliency_coverage_75_image_mean','',0.0,0.0,0.0,18);
INSERT INTO "metrics" VALUES(4,'saliency_ap_image_mean','',1.19791666666666671292e-01,1.03460015190972226539e-01,1.3824327256944440867e-01,18);
INSERT INTO "metrics" VALUES(4,'saliency_flat_maps','',18.0,NULL,NULL,18);
INSERT INTO "metrics" VALUES(5,'features_bg_share','',0.8885498046875,NULL,NULL,8);
INSERT INTO "metrics" VALUES(5,'features_bg_area','',0.8885498046875,NULL,NULL,8);
INSERT INTO "metrics" VALUES(5,'features_spurious','',0.0,NULL,NULL,8);
INSERT INTO "metrics" VALUES(5,'features_bg_share','00_circle',0.9091796875,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_area','00_circle',0.9091796875,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_share','01_square',0.8544921875,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_area','01_square',0.8544921875,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_share','02_triangle',0.87353515625,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_area','02_triangle',0.87353515625,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_share','08_bar',0.9169921875,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_bg_area','08_bar',0.9169921875,NULL,NULL,2);
INSERT INTO "metrics" VALUES(5,'features_top_spurious_bg_share','',NULL,NULL,NULL,0);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg',-5.55555555555555524716e-02,-1.11111111111111104943e-01,0.0,18);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg',-3.25338294108708681474e-04,-5.35995647725131716364e-04,-1.26493484195735762234e-04,18);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/00_circle',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/00_circle',-6.76363706588745117187e-05,-4.67374920845031738281e-04,3.32102179527282714843e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/01_square',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/01_square',1.92281603813171386718e-03,1.89062952995300292968e-03,1.95500254631042480468e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/02_triangle',-0.5,-1.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/02_triangle',-7.72796571254730224609e-04,-1.59786641597747802734e-03,5.2273273468017578125e-05,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/03_cross',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/03_cross',-5.4113343358039855957e-03,-5.50531595945358276367e-03,-5.31735271215438842773e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/04_ring',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/04_ring',-8.07616859674453735351e-04,-1.72473490238189697265e-03,1.09501183032989501953e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/05_star',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/05_star',1.1158809065818786621e-03,9.29445028305053710937e-04,1.30231678485870361328e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/06_diamond',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/06_diamond',2.5095418095588684082e-04,5.21540641784668e-06,0.000496692955493927,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/07_crescent',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/07_crescent',6.82063400745391845703e-05,1.30683183670043945312e-05,1.23344361782073974609e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','fg/08_bar',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','fg/08_bar',7.73482024669647216796e-04,5.7188421487808227539e-04,9.75079834461212158203e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg',-5.55555555555555524716e-02,-1.11111111111111104943e-01,0.0,18);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg',-0.000650907556215922,-1.70956148455540324695e-03,3.67333046678039541049e-04,18);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/00_circle',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/00_circle',3.2898075878620147705e-03,1.27732008695602416992e-03,5.30229508876800537109e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/01_square',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/01_square',4.0824413299560546875e-03,-6.96979463100433349609e-04,8.8618621230125427246e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/02_triangle',0.5,0.0,1.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/02_triangle',3.51097062230110168457e-03,9.08501446247100830078e-04,6.11343979835510253906e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/03_cross',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/03_cross',-3.00790742039680480957e-03,-5.37206977605819702148e-03,-6.43745064735412597656e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/04_ring',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/04_ring',-3.36151942610740661621e-03,-4.906177520751953125e-03,-0.00181686133146286,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/05_star',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/05_star',1.25101208686828613281e-03,5.095005035400390625e-04,1.99252367019653320312e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/06_diamond',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/06_diamond',0.00129757821559906,3.78511846065521240234e-04,2.21664458513259887695e-03,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/07_crescent',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/07_crescent',-1.1830069124698638916e-02,-1.28902420401573181152e-02,-1.07698962092399597167e-02,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','bg/08_bar',-1.0,-1.0,-1.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','bg/08_bar',-1.09048187732696533203e-03,-1.2118816375732421875e-03,-9.69082117080688476562e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:dot',0.0,0.0,0.0,6);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:dot',2.47042626142501831054e-04,1.61920984586079924399e-04,3.32164267698923764814e-04,6);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:dot/00_circle',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:dot/00_circle',5.4651126265525817871e-04,4.1711330413818359375e-04,6.75909221172332763671e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:dot/03_cross',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:dot/03_cross',-3.76850366592407226562e-05,-1.49913132190704345703e-04,7.45430588722229e-05,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:dot/06_diamond',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:dot/06_diamond',2.32301652431488037109e-04,1.06334686279296875e-04,3.58268618583679199218e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:notch',0.0,0.0,0.0,6);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:notch',-6.67770703633626256908e-05,-2.82706071933110536942e-04,1.49151931206385285561e-04,6);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:notch/02_triangle',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:notch/02_triangle',-6.92728906869888305664e-04,-7.17274844646453857421e-04,-6.68182969093322753906e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:notch/05_star',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:notch/05_star',4.8879534006118774414e-05,-2.33441591262817382812e-04,3.3120065927505493164e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:notch/08_bar',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:notch/08_bar',4.43518161773681640625e-04,7.80522823333740234375e-05,8.08984041213989257812e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim',0.0,0.0,0.0,13);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim',-3.47848695058089040377e-04,-5.61660556839062557327e-04,-1.2713983993638665478e-04,13);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/00_circle',0.0,0.0,0.0,1);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/00_circle',-1.16188079118728637695e-03,-1.16188079118728637695e-03,-1.16188079118728637695e-03,1);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/01_square',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/01_square',1.43301486968994140625e-03,1.38524919748306274414e-03,0.00148078054189682,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/02_triangle',0.0,0.0,0.0,1);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/02_triangle',-5.60574233531951904296e-04,-5.60574233531951904296e-04,-5.60574233531951904296e-04,1);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/03_cross',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/03_cross',-0.00317169725894928,-3.46507877111434936523e-03,-0.00287831574678421,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/04_ring',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/04_ring',-7.6665356755256652832e-04,-1.59461051225662231445e-03,6.13033771514892578125e-05,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/05_star',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/05_star',6.8932399153709411621e-04,5.16183674335479736328e-04,8.62464308738708496093e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/06_diamond',0.0,0.0,0.0,1);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/06_diamond',2.10478901863098144531e-04,2.10478901863098144531e-04,2.10478901863098144531e-04,1);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:rim/08_bar',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:rim/08_bar',3.10983508825302124023e-04,0.000260673463344574,3.61293554306030273437e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:stripes',0.0,0.0,0.0,6);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:stripes',1.43830974896748869712e-04,-7.71135091781616210937e-07,2.88433084885279355635e-04,6);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:stripes/01_square',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:stripes/01_square',6.71479851007461547851e-04,5.87478280067443847656e-04,7.55481421947479248046e-04,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:stripes/04_ring',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:stripes/04_ring',-1.7883256077766418457e-04,-3.00630927085876464843e-04,-5.70341944694519042968e-05,2);
INSERT INTO "metrics" VALUES(6,'ablation_acc_drop','attr:stripes/07_crescent',0.0,0.0,0.0,2);
INSERT INTO "metrics" VALUES(6,'ablation_prob_drop','attr:stripes/07_crescent',-6.115436553955078125e-05,-3.7316232919692993164e-04,2.5085359811782836914e-04,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','dot',0.0244140625,0.0205078125,0.0283203125,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','dot/all',0.0185546875,1.33463541666666660884e-02,2.31119791666666678231e-02,6);
INSERT INTO "metrics" VALUES(7,'attribution_iou','dot/00_circle',0.0244140625,0.0205078125,0.0283203125,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','dot/03_cross',0.0146484375,0.0087890625,0.0205078125,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','dot/06_diamond',0.0166015625,0.0126953125,0.0205078125,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','notch',0.009765625,0.0078125,0.01171875,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','notch/all',7.64973958333333304421e-03,6.02213541666666695578e-03,9.44010416666666608842e-03,6);
INSERT INTO "metrics" VALUES(7,'attribution_iou','notch/02_triangle',0.009765625,0.0078125,0.01171875,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','notch/05_star',0.005859375,0.0048828125,0.0068359375,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','notch/08_bar',0.00732421875,0.005859375,0.0087890625,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim',0.1015625,0.08984375,0.11328125,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/all',6.79086538461538408162e-02,5.44621394230769204081e-02,8.14340444711538213873e-02,13);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/00_circle',0.03515625,0.03515625,0.03515625,1);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/01_square',0.0791015625,0.0390625,0.119140625,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/02_triangle',0.05859375,0.05859375,0.05859375,1);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/03_cross',0.0693359375,0.0576171875,0.0810546875,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/04_ring',0.1015625,0.08984375,0.11328125,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/05_star',0.06689453125,0.0546875,0.0791015625,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/06_diamond',0.05078125,0.05078125,0.05078125,1);
INSERT INTO "metrics" VALUES(7,'attribution_iou','rim/08_bar',0.05224609375,0.05078125,0.0537109375,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','stripes',0.0322265625,0.01953125,0.044921875,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','stripes/all',0.02001953125,0.01025390625,0.03125,6);
INSERT INTO "metrics" VALUES(7,'attribution_iou','stripes/01_square',0.0322265625,0.01953125,0.044921875,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','stripes/04_ring',0.01513671875,0.0029296875,0.02734375,2);
INSERT INTO "metrics" VALUES(7,'attribution_iou','stripes/07_crescent',0.0126953125,0.01171875,0.013671875,2);
CREATE TABLE predictions (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant TEXT NOT NULL,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    pred INTEGER NOT NULL,
    confidence REAL NOT NULL,
    top5_classes TEXT,
    top5_probs TEXT,
    superclass_probs TEXT,
    PRIMARY KEY (run_id, variant, image_id)
);
INSERT INTO "predictions" VALUES(1,'original','00_circle/synth_val_00000',0,1,1.24553360044956207275e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','00_circle/synth_val_00001',0,8,1.27620875835418701171e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','01_square/synth_val_00002',1,8,1.24525196850299835205e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','01_square/synth_val_00003',1,8,1.23608082532882690429e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','02_triangle/synth_val_00004',2,8,1.22585341334342956542e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','02_triangle/synth_val_00005',2,2,1.2566782534122467041e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','03_cross/synth_val_00006',3,0,1.25815585255622863769e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','03_cross/synth_val_00007',3,0,1.23341411352157592773e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','04_ring/synth_val_00008',4,0,1.23380638659000396728e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','04_ring/synth_val_00009',4,0,1.3045527040958404541e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','05_star/synth_val_00010',5,0,1.31120890378952026367e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','05_star/synth_val_00011',5,0,1.28216311335563659667e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','06_diamond/synth_val_00012',6,8,1.23541496694087982177e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','06_diamond/synth_val_00013',6,8,1.27743437886238098144e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','07_crescent/synth_val_00014',7,8,1.27367466688156127929e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','07_crescent/synth_val_00015',7,8,1.2766341865062713623e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','08_bar/synth_val_00016',8,2,1.21280185878276824951e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'original','08_bar/synth_val_00017',8,2,1.20579630136489868164e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','00_circle/synth_val_00000',0,1,1.28262922167778015136e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','00_circle/synth_val_00001',0,8,0.129336878657341,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','01_square/synth_val_00002',1,8,1.24119140207767486572e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','01_square/synth_val_00003',1,8,1.25178664922714233398e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','02_triangle/synth_val_00004',2,0,1.23624041676521301269e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','02_triangle/synth_val_00005',2,0,1.26363500952720642089e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','03_cross/synth_val_00006',3,0,1.25687226653099060058e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','03_cross/synth_val_00007',3,0,1.23502761125564575195e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','04_ring/synth_val_00008',4,0,1.23868286609649658203e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','04_ring/synth_val_00009',4,0,1.30069598555564880371e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','05_star/synth_val_00010',5,0,1.31194263696670532226e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','05_star/synth_val_00011',5,0,1.28288149833679199218e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','06_diamond/synth_val_00012',6,0,1.23316995799541473388e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','06_diamond/synth_val_00013',6,8,0.127008318901062,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','07_crescent/synth_val_00014',7,8,1.29689738154411315917e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','07_crescent/synth_val_00015',7,0,1.27503484487533569335e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','08_bar/synth_val_00016',8,0,1.21785663068294525146e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_b','08_bar/synth_val_00017',8,8,1.22490413486957550048e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','00_circle/synth_val_00000',0,1,1.25200733542442321777e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','00_circle/synth_val_00001',0,8,1.26419723033905029296e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','01_square/synth_val_00002',1,8,1.23531989753246307373e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','01_square/synth_val_00003',1,2,1.21733799576759338378e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','02_triangle/synth_val_00004',2,2,1.20631538331508636474e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','02_triangle/synth_val_00005',2,2,1.27306103706359863281e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','03_cross/synth_val_00006',3,2,1.25247463583946228027e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','03_cross/synth_val_00007',3,2,1.23330295085906982421e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','04_ring/synth_val_00008',4,2,1.22101835906505584716e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','04_ring/synth_val_00009',4,0,1.28855437040328979492e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','05_star/synth_val_00010',5,0,1.29474058747291564941e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','05_star/synth_val_00011',5,2,1.26102179288864135742e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','06_diamond/synth_val_00012',6,8,1.22843600809574127197e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','06_diamond/synth_val_00013',6,8,1.27795845270156860351e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','07_crescent/synth_val_00014',7,8,1.27544671297073364257e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','07_crescent/synth_val_00015',7,8,1.27905875444412231445e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','08_bar/synth_val_00016',8,2,1.21270097792148590087e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_bg_t','08_bar/synth_val_00017',8,2,1.20800137519836425781e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','00_circle/synth_val_00000',0,1,1.27756193280220031738e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','00_circle/synth_val_00001',0,8,1.28093257546424865722e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','01_square/synth_val_00002',1,8,1.24345913529396057128e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','01_square/synth_val_00003',1,8,1.24993160367012023925e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','02_triangle/synth_val_00004',2,8,1.22735351324081420898e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','02_triangle/synth_val_00005',2,0,1.27376601099967956542e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','03_cross/synth_val_00006',3,0,1.25640437006950378417e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','03_cross/synth_val_00007',3,0,1.23082742094993591308e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','04_ring/synth_val_00008',4,0,1.25302851200103759765e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','04_ring/synth_val_00009',4,0,1.30911052227020263671e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','05_star/synth_val_00010',5,0,1.33024483919143676757e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','05_star/synth_val_00011',5,0,1.30776941776275634765e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','06_diamond/synth_val_00012',6,8,1.23115509748458862304e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','06_diamond/synth_val_00013',6,8,1.27938747406005859375e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','07_crescent/synth_val_00014',7,8,1.28551781177520751953e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','07_crescent/synth_val_00015',7,8,1.30365893244743347167e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','08_bar/synth_val_00016',8,0,1.21875248849391937255e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'no_fg','08_bar/synth_val_00017',8,8,1.21349707245826721191e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','00_circle/synth_val_00000',0,1,1.29492178559303283691e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','00_circle/synth_val_00001',0,1,1.31520003080368041992e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','01_square/synth_val_00002',1,1,1.31953254342079162597e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','01_square/synth_val_00003',1,1,1.28717154264450073242e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','02_triangle/synth_val_00004',2,1,1.32711589336395263671e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','02_triangle/synth_val_00005',2,1,1.3207702338695526123e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','03_cross/synth_val_00006',3,1,1.32646694779396057128e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','03_cross/synth_val_00007',3,1,1.31965488195419311523e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','04_ring/synth_val_00008',4,1,1.32844582200050354003e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','04_ring/synth_val_00009',4,1,1.32930085062980651855e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','05_star/synth_val_00010',5,1,1.3091620802879333496e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','05_star/synth_val_00011',5,1,1.30174860358238220214e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','06_diamond/synth_val_00012',6,1,1.29610031843185424804e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','06_diamond/synth_val_00013',6,1,1.30026608705520629882e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','07_crescent/synth_val_00014',7,1,1.30323484539985656738e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','07_crescent/synth_val_00015',7,1,1.32291197776794433593e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','08_bar/synth_val_00016',8,1,1.31849750876426696777e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'only_fg','08_bar/synth_val_00017',8,1,1.31212621927261352539e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','00_circle/synth_val_00000',0,8,1.276915818452835083e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','00_circle/synth_val_00001',0,1,1.25814184546470642089e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','01_square/synth_val_00002',1,2,1.21943920850753784179e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','01_square/synth_val_00003',1,8,1.24963022768497467041e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','02_triangle/synth_val_00004',2,2,1.2588812410831451416e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','02_triangle/synth_val_00005',2,0,1.21202774345874786376e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','03_cross/synth_val_00006',3,2,1.23747713863849639892e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','03_cross/synth_val_00007',3,0,1.2798219919204711914e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','04_ring/synth_val_00008',4,0,1.30234643816947937011e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','04_ring/synth_val_00009',4,2,1.22092410922050476074e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','05_star/synth_val_00010',5,0,1.26660287380218505859e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','05_star/synth_val_00011',5,0,1.31500616669654846191e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','06_diamond/synth_val_00012',6,8,1.27269774675369262695e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','06_diamond/synth_val_00013',6,8,1.23683489859104156494e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','07_crescent/synth_val_00014',7,8,1.27620846033096313476e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','07_crescent/synth_val_00015',7,8,1.2720921635627746582e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','08_bar/synth_val_00016',8,2,1.2140229344367980957e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_same','08_bar/synth_val_00017',8,2,1.2111895531415939331e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','00_circle/synth_val_00000',0,8,1.276915818452835083e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','00_circle/synth_val_00001',0,2,1.24158926308155059814e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','01_square/synth_val_00002',1,2,1.21092692017555236816e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','01_square/synth_val_00003',1,0,1.30022317171096801757e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','02_triangle/synth_val_00004',2,0,1.29970893263816833496e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','02_triangle/synth_val_00005',2,8,1.23253867030143737792e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','03_cross/synth_val_00006',3,8,1.23438999056816101074e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','03_cross/synth_val_00007',3,0,1.32899895310401916503e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','04_ring/synth_val_00008',4,8,1.2792447209358215332e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','04_ring/synth_val_00009',4,2,1.22092410922050476074e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','05_star/synth_val_00010',5,2,1.21262669563293457031e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','05_star/synth_val_00011',5,0,1.31500616669654846191e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','06_diamond/synth_val_00012',6,8,1.2695178389549255371e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','06_diamond/synth_val_00013',6,1,0.125398650765419,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','07_crescent/synth_val_00014',7,2,1.21449999511241912841e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','07_crescent/synth_val_00015',7,1,1.25033780932426452636e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','08_bar/synth_val_00016',8,8,1.27224192023277282714e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_rand','08_bar/synth_val_00017',8,8,0.127749964594841,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','00_circle/synth_val_00000',0,8,1.23408891260623931884e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','00_circle/synth_val_00001',0,8,1.21979609131813049316e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','01_square/synth_val_00002',1,2,1.2620264291763305664e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','01_square/synth_val_00003',1,2,1.24756202101707458496e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','02_triangle/synth_val_00004',2,8,1.22813329100608825683e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','02_triangle/synth_val_00005',2,2,1.23298011720180511474e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','03_cross/synth_val_00006',3,2,1.23604409396648406982e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','03_cross/synth_val_00007',3,0,1.24318636953830718994e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','04_ring/synth_val_00008',4,0,1.30686610937118530273e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','04_ring/synth_val_00009',4,0,1.28172054886817932128e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','05_star/synth_val_00010',5,8,1.2660916149616241455e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','05_star/synth_val_00011',5,8,1.22943699359893798828e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','06_diamond/synth_val_00012',6,8,1.2695178389549255371e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','06_diamond/synth_val_00013',6,8,1.27879425883293151855e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','07_crescent/synth_val_00014',7,2,1.20733663439750671386e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','07_crescent/synth_val_00015',7,2,1.21347978711128234863e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','08_bar/synth_val_00016',8,8,1.27533510327339172363e-01,NULL,NULL,NULL);
INSERT INTO "predictions" VALUES(1,'mixed_next','08_bar/synth_val_00017',8,8,0.127958744764328,NULL,NULL,NULL);
CREATE TABLE probe_ablate (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    region TEXT NOT NULL,
    pred INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    true_prob REAL NOT NULL,
    PRIMARY KEY (run_id, image_id, region)
);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00000',0,'none',1,0,1.21824540197849273681e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00001',0,'none',8,0,1.18272371590137481689e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00002',1,'none',8,0,1.19810208678245544433e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00003',1,'none',8,0,1.10395878553390502929e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00004',2,'none',8,0,1.20342604815959930419e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00005',2,'none',2,1,1.2566782534122467041e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00006',3,'none',0,0,1.02142989635467529296e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00007',3,'none',0,0,0.0966218039393425);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00008',4,'none',0,0,9.72980633378028869628e-02);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00009',4,'none',0,0,9.52766686677932739257e-02);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00010',5,'none',0,0,1.14368505775928497314e-01);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00011',5,'none',0,0,1.15590088069438934326e-01);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00012',6,'none',8,0,9.87071990966796875e-02);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00013',6,'none',8,0,1.00841410458087921142e-01);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00014',7,'none',8,0,1.03340275585651397705e-01);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00015',7,'none',8,0,1.01380094885826110839e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00016',8,'none',2,0,1.19442820549011230468e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00017',8,'none',2,0,1.19603171944618225097e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00000',0,'fg',1,0,1.21492438018321990966e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00001',0,'fg',8,0,1.18739746510982513427e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00002',1,'fg',8,0,1.17855206131935119628e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00003',1,'fg',2,0,1.085052490234375e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00004',2,'fg',2,1,1.20290331542491912841e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00005',2,'fg',2,1,1.27265691757202148437e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00006',3,'fg',2,0,1.0764830559492111206e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00007',3,'fg',2,0,1.01939156651496887207e-01);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00008',4,'fg',2,0,9.90227982401847839355e-02);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00009',4,'fg',0,0,9.51671674847602844238e-02);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00010',5,'fg',0,0,1.13439060747623443603e-01);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00011',5,'fg',0,0,1.14287771284580230712e-01);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00012',6,'fg',8,0,9.87019836902618408203e-02);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00013',6,'fg',8,0,0.100344717502594);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00014',7,'fg',8,0,1.0332720726728439331e-01);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00015',7,'fg',8,0,1.01256750524044036865e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00016',8,'fg',2,0,1.1846774071455001831e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00017',8,'fg',2,0,1.19031287729740142822e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00000',0,'bg',2,0,1.1652224510908126831e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00001',0,'bg',2,0,1.16995051503181457519e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00002',1,'bg',8,0,0.110948346555233);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00003',1,'bg',8,0,1.11092858016490936279e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00004',2,'bg',8,0,1.19434103369712829589e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00005',2,'bg',8,0,1.19554385542869567871e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00006',3,'bg',8,0,1.02786734700202941894e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00007',3,'bg',8,0,1.019938737154006958e-01);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00008',4,'bg',8,0,9.91149246692657470703e-02);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00009',4,'bg',8,0,1.0018284618854522705e-01);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00010',5,'bg',8,0,1.13859005272388458251e-01);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00011',5,'bg',8,0,1.13597564399242401123e-01);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00012',6,'bg',8,0,9.83286872506141662597e-02);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00013',6,'bg',8,0,9.86247658729553222656e-02);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00014',7,'bg',8,0,1.14110171794891357421e-01);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00015',7,'bg',8,0,1.14270336925983428955e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00016',8,'bg',8,1,1.20654702186584472656e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00017',8,'bg',8,1,1.20572254061698913574e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00000',0,'attr:dot',1,0,1.21148630976676940917e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00001',0,'attr:dot',8,0,1.17855258285999298095e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00006',3,'attr:dot',0,0,1.02068446576595306396e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00007',3,'attr:dot',0,0,0.0967717170715332);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00012',6,'attr:dot',8,0,9.83489304780960083007e-02);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00013',6,'attr:dot',8,0,1.00735075771808624267e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00004',2,'attr:notch',8,0,1.21059879660606384277e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00005',2,'attr:notch',2,1,0.126336008310318);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00010',5,'attr:notch',0,0,1.14037305116653442382e-01);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00011',5,'attr:notch',0,0,1.15823529660701751708e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00016',8,'attr:notch',2,0,1.1863383650779724121e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00017',8,'attr:notch',2,0,1.19525119662284851074e-01);
INSERT INTO "probe_ablate" VALUES(6,'00_circle/synth_val_00001',0,'attr:rim',8,0,1.19434252381324768066e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00002',1,'attr:rim',8,0,1.18329428136348724365e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00003',1,'attr:rim',2,0,1.09010629355907440185e-01);
INSERT INTO "probe_ablate" VALUES(6,'02_triangle/synth_val_00004',2,'attr:rim',8,0,1.20903179049491882324e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00006',3,'attr:rim',2,0,1.05608068406581878662e-01);
INSERT INTO "probe_ablate" VALUES(6,'03_cross/synth_val_00007',3,'attr:rim',2,0,9.95001196861267089843e-02);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00008',4,'attr:rim',2,0,9.88926738500595092773e-02);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00009',4,'attr:rim',0,0,9.52153652906417846679e-02);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00010',5,'attr:rim',0,0,1.13852322101593017578e-01);
INSERT INTO "probe_ablate" VALUES(6,'05_star/synth_val_00011',5,'attr:rim',0,0,1.1472762376070022583e-01);
INSERT INTO "probe_ablate" VALUES(6,'06_diamond/synth_val_00013',6,'attr:rim',8,0,1.00630931556224822998e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00016',8,'attr:rim',2,0,1.19081526994705200195e-01);
INSERT INTO "probe_ablate" VALUES(6,'08_bar/synth_val_00017',8,'attr:rim',2,0,1.19342498481273651123e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00002',1,'attr:stripes',8,0,1.19222730398178100585e-01);
INSERT INTO "probe_ablate" VALUES(6,'01_square/synth_val_00003',1,'attr:stripes',8,0,1.09640397131443023681e-01);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00008',4,'attr:stripes',2,0,9.75986942648887634277e-02);
INSERT INTO "probe_ablate" VALUES(6,'04_ring/synth_val_00009',4,'attr:stripes',0,0,9.533370286226272583e-02);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00014',7,'attr:stripes',8,0,1.03713437914848327636e-01);
INSERT INTO "probe_ablate" VALUES(6,'07_crescent/synth_val_00015',7,'attr:stripes',8,0,1.0112924128770828247e-01);
CREATE TABLE probe_attribution (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    attribute TEXT NOT NULL,
    feature INTEGER NOT NULL,
    iou REAL NOT NULL,
    PRIMARY KEY (run_id, image_id, attribute, feature)
);
INSERT INTO "probe_attribution" VALUES(7,'00_circle/synth_val_00000',0,'dot',0,0.0283203125);
INSERT INTO "probe_attribution" VALUES(7,'00_circle/synth_val_00001',0,'dot',0,0.0205078125);
INSERT INTO "probe_attribution" VALUES(7,'00_circle/synth_val_00001',0,'rim',0,0.03515625);
INSERT INTO "probe_attribution" VALUES(7,'01_square/synth_val_00002',1,'rim',0,0.0390625);
INSERT INTO "probe_attribution" VALUES(7,'01_square/synth_val_00002',1,'stripes',0,0.01953125);
INSERT INTO "probe_attribution" VALUES(7,'01_square/synth_val_00003',1,'rim',0,0.119140625);
INSERT INTO "probe_attribution" VALUES(7,'01_square/synth_val_00003',1,'stripes',0,0.044921875);
INSERT INTO "probe_attribution" VALUES(7,'02_triangle/synth_val_00004',2,'notch',0,0.01171875);
INSERT INTO "probe_attribution" VALUES(7,'02_triangle/synth_val_00004',2,'rim',0,0.05859375);
INSERT INTO "probe_attribution" VALUES(7,'02_triangle/synth_val_00005',2,'notch',0,0.0078125);
INSERT INTO "probe_attribution" VALUES(7,'03_cross/synth_val_00006',3,'dot',0,0.0087890625);
INSERT INTO "probe_attribution" VALUES(7,'03_cross/synth_val_00006',3,'rim',0,0.0576171875);
INSERT INTO "probe_attribution" VALUES(7,'03_cross/synth_val_00007',3,'dot',0,0.0205078125);
INSERT INTO "probe_attribution" VALUES(7,'03_cross/synth_val_00007',3,'rim',0,0.0810546875);
INSERT INTO "probe_attribution" VALUES(7,'04_ring/synth_val_00008',4,'rim',0,0.11328125);
INSERT INTO "probe_attribution" VALUES(7,'04_ring/synth_val_00008',4,'stripes',0,0.02734375);
INSERT INTO "probe_attribution" VALUES(7,'04_ring/synth_val_00009',4,'rim',0,0.08984375);
INSERT INTO "probe_attribution" VALUES(7,'04_ring/synth_val_00009',4,'stripes',0,0.0029296875);
INSERT INTO "probe_attribution" VALUES(7,'05_star/synth_val_00010',5,'notch',0,0.0048828125);
INSERT INTO "probe_attribution" VALUES(7,'05_star/synth_val_00010',5,'rim',0,0.0546875);
INSERT INTO "probe_attribution" VALUES(7,'05_star/synth_val_00011',5,'notch',0,0.0068359375);
INSERT INTO "probe_attribution" VALUES(7,'05_star/synth_val_00011',5,'rim',0,0.0791015625);
INSERT INTO "probe_attribution" VALUES(7,'06_diamond/synth_val_00012',6,'dot',0,0.0126953125);
INSERT INTO "probe_attribution" VALUES(7,'06_diamond/synth_val_00013',6,'dot',0,0.0205078125);
INSERT INTO "probe_attribution" VALUES(7,'06_diamond/synth_val_00013',6,'rim',0,0.05078125);
INSERT INTO "probe_attribution" VALUES(7,'07_crescent/synth_val_00014',7,'stripes',0,0.01171875);
INSERT INTO "probe_attribution" VALUES(7,'07_crescent/synth_val_00015',7,'stripes',0,0.013671875);
INSERT INTO "probe_attribution" VALUES(7,'08_bar/synth_val_00016',8,'notch',0,0.0087890625);
INSERT INTO "probe_attribution" VALUES(7,'08_bar/synth_val_00016',8,'rim',0,0.05078125);
INSERT INTO "probe_attribution" VALUES(7,'08_bar/synth_val_00017',8,'notch',0,0.005859375);
INSERT INTO "probe_attribution" VALUES(7,'08_bar/synth_val_00017',8,'rim',0,0.0537109375);
CREATE TABLE probe_features (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    class_index INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    feature INTEGER NOT NULL,
    contribution REAL NOT NULL,
    weight REAL NOT NULL,
    mean_activation REAL NOT NULL,
    images INTEGER NOT NULL,
    bg_share REAL,
    bg_area REAL NOT NULL,
    spurious INTEGER NOT NULL,
    top_images TEXT NOT NULL,
    top_activations TEXT NOT NULL,
    top_bg_shares TEXT NOT NULL,
    PRIMARY KEY (run_id, class_index, rank)
);
INSERT INTO "probe_features" VALUES(5,0,1,68,5.52234878191484312992e-02,0.0674278736114502,8.19000879923502567159e-01,6,0.9091796875,0.9091796875,0,'["05_star/synth_val_00010", "04_ring/synth_val_00009"]','[1.0176732540130615, 0.8720535635948181]','[0.916015625, 0.90234375]');
INSERT INTO "probe_features" VALUES(5,0,2,92,5.00751409623068077792e-02,7.44406878948211669921e-02,6.72685091694196102274e-01,6,0.9091796875,0.9091796875,0,'["05_star/synth_val_00010", "04_ring/synth_val_00009"]','[0.8516455888748169, 0.7273634672164917]','[0.916015625, 0.90234375]');
INSERT INTO "probe_features" VALUES(5,1,1,20,4.6852114224058993841e-02,7.00737833976745605468e-02,6.68611168861389160156e-01,1,0.8544921875,0.8544921875,0,'["00_circle/synth_val_00000"]','[0.6686111688613892]','[0.8544921875]');
INSERT INTO "probe_features" VALUES(5,1,2,57,4.50976389809287780963e-02,9.26146209239959716796e-02,4.86938655376434326171e-01,1,0.8544921875,0.8544921875,0,'["00_circle/synth_val_00000"]','[0.4869386553764343]','[0.8544921875]');
INSERT INTO "probe_features" VALUES(5,2,1,37,2.16391920272309690176e-02,0.0686018317937851,3.15431694189707456654e-01,3,0.87353515625,0.87353515625,0,'["08_bar/synth_val_00016", "02_triangle/synth_val_00005"]','[0.3659038543701172, 0.34374451637268066]','[0.87890625, 0.8681640625]');
INSERT INTO "probe_features" VALUES(5,2,2,76,2.14798870864752640408e-02,1.00233800709247589111e-01,2.14297840992609650578e-01,3,0.87353515625,0.87353515625,0,'["02_triangle/synth_val_00005", "08_bar/synth_val_00016"]','[0.25517675280570984, 0.24094218015670776]','[0.8681640625, 0.87890625]');
INSERT INTO "probe_features" VALUES(5,8,1,68,2.60724309544130283811e-02,3.41518782079219818115e-02,7.63425976037979125976e-01,8,0.9267578125,0.9267578125,0,'["07_crescent/synth_val_00015", "07_crescent/synth_val_00014"]','[1.1077909469604492, 0.8967597484588623]','[0.9169921875, 0.9365234375]');
INSERT INTO "probe_features" VALUES(5,8,2,20,2.06179942024565937552e-02,5.3275365382432937622e-02,3.87008029967546463012e-01,8,0.9072265625,0.9072265625,0,'["06_diamond/synth_val_00013", "00_circle/synth_val_00001"]','[0.5331684947013855, 0.46816736459732056]','[0.8935546875, 0.9208984375]');
CREATE TABLE probe_noise (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    region TEXT NOT NULL,
    level REAL NOT NULL,
    trial INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    pred INTEGER,
    PRIMARY KEY (run_id, image_id, region, level, trial)
);
INSERT INTO "probe_noise" VALUES(3,'00_circle/synth_val_00000',0,'fg',0.5,0,0,1);
INSERT INTO "probe_noise" VALUES(3,'00_circle/synth_val_00001',0,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'01_square/synth_val_00002',1,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'01_square/synth_val_00003',1,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'02_triangle/synth_val_00004',2,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'02_triangle/synth_val_00005',2,'fg',0.5,0,1,2);
INSERT INTO "probe_noise" VALUES(3,'03_cross/synth_val_00006',3,'fg',0.5,0,0,2);
INSERT INTO "probe_noise" VALUES(3,'03_cross/synth_val_00007',3,'fg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'04_ring/synth_val_00008',4,'fg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'04_ring/synth_val_00009',4,'fg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'05_star/synth_val_00010',5,'fg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'05_star/synth_val_00011',5,'fg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'06_diamond/synth_val_00012',6,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'06_diamond/synth_val_00013',6,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'07_crescent/synth_val_00014',7,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'07_crescent/synth_val_00015',7,'fg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'08_bar/synth_val_00016',8,'fg',0.5,0,0,2);
INSERT INTO "probe_noise" VALUES(3,'08_bar/synth_val_00017',8,'fg',0.5,0,1,8);
INSERT INTO "probe_noise" VALUES(3,'00_circle/synth_val_00000',0,'bg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'00_circle/synth_val_00001',0,'bg',0.5,0,1,0);
INSERT INTO "probe_noise" VALUES(3,'01_square/synth_val_00002',1,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'01_square/synth_val_00003',1,'bg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'02_triangle/synth_val_00004',2,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'02_triangle/synth_val_00005',2,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'03_cross/synth_val_00006',3,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'03_cross/synth_val_00007',3,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'04_ring/synth_val_00008',4,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'04_ring/synth_val_00009',4,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'05_star/synth_val_00010',5,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'05_star/synth_val_00011',5,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'06_diamond/synth_val_00012',6,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'06_diamond/synth_val_00013',6,'bg',0.5,0,0,8);
INSERT INTO "probe_noise" VALUES(3,'07_crescent/synth_val_00014',7,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'07_crescent/synth_val_00015',7,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'08_bar/synth_val_00016',8,'bg',0.5,0,0,0);
INSERT INTO "probe_noise" VALUES(3,'08_bar/synth_val_00017',8,'bg',0.5,0,0,0);
CREATE TABLE probe_saliency (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    image_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    pred INTEGER NOT NULL,
    precision REAL,
    iou REAL,
    dice REAL,
    density_diff REAL,
    coverage_25 REAL,
    coverage_50 REAL,
    coverage_75 REAL,
    ap REAL,
    PRIMARY KEY (run_id, image_id)
);
INSERT INTO "probe_saliency" VALUES(4,'00_circle/synth_val_00000',0,1,NULL,6.71140939596865130755e-13,6.71140939596865130755e-13,0.0,0.0,0.0,0.0,0.1455078125);
INSERT INTO "probe_saliency" VALUES(4,'00_circle/synth_val_00001',0,8,NULL,1.23456790123304382673e-12,1.23456790123304382673e-12,0.0,0.0,0.0,0.0,0.0791015625);
INSERT INTO "probe_saliency" VALUES(4,'01_square/synth_val_00002',1,8,NULL,1.08695652173794889193e-12,1.08695652173794889193e-12,0.0,0.0,0.0,0.0,0.08984375);
INSERT INTO "probe_saliency" VALUES(4,'01_square/synth_val_00003',1,8,NULL,4.32900432900245516615e-13,4.32900432900245516615e-13,0.0,0.0,0.0,0.0,0.2255859375);
INSERT INTO "probe_saliency" VALUES(4,'02_triangle/synth_val_00004',2,8,NULL,7.40740740740192125587e-13,7.40740740740192125587e-13,0.0,0.0,0.0,0.0,0.1318359375);
INSERT INTO "probe_saliency" VALUES(4,'02_triangle/synth_val_00005',2,2,NULL,7.40740740740192125587e-13,7.40740740740192125587e-13,0.0,0.0,0.0,0.0,0.1318359375);
INSERT INTO "probe_saliency" VALUES(4,'03_cross/synth_val_00006',3,0,NULL,9.52380952380045373104e-13,9.52380952380045373104e-13,0.0,0.0,0.0,0.0,0.1025390625);
INSERT INTO "probe_saliency" VALUES(4,'03_cross/synth_val_00007',3,0,NULL,5.43478260869269896426e-13,5.43478260869269896426e-13,0.0,0.0,0.0,0.0,0.1796875);
INSERT INTO "probe_saliency" VALUES(4,'04_ring/synth_val_00008',4,0,NULL,5.81395348836871339332e-13,5.81395348836871339332e-13,0.0,0.0,0.0,0.0,0.16796875);
INSERT INTO "probe_saliency" VALUES(4,'04_ring/synth_val_00009',4,0,NULL,9.99999999999e-13,9.99999999999e-13,0.0,0.0,0.0,0.0,0.09765625);
INSERT INTO "probe_saliency" VALUES(4,'05_star/synth_val_00010',5,0,NULL,1.16279069767306655555e-12,1.16279069767306655555e-12,0.0,0.0,0.0,0.0,0.083984375);
INSERT INTO "probe_saliency" VALUES(4,'05_star/synth_val_00011',5,0,NULL,6.89655172413317522038e-13,6.89655172413317522038e-13,0.0,0.0,0.0,0.0,0.1416015625);
INSERT INTO "probe_saliency" VALUES(4,'06_diamond/synth_val_00012',6,8,NULL,8.69565217390548218009e-13,8.69565217390548218009e-13,0.0,0.0,0.0,0.0,0.1123046875);
INSERT INTO "probe_saliency" VALUES(4,'06_diamond/synth_val_00013',6,8,NULL,9.17431192659708847226e-13,9.17431192659708847226e-13,0.0,0.0,0.0,0.0,0.1064453125);
INSERT INTO "probe_saliency" VALUES(4,'07_crescent/synth_val_00014',7,8,NULL,1.53846153845917162647e-12,1.53846153845917162647e-12,0.0,0.0,0.0,0.0,0.0634765625);
INSERT INTO "probe_saliency" VALUES(4,'07_crescent/synth_val_00015',7,8,NULL,1.17647058823391e-12,1.17647058823391e-12,0.0,0.0,0.0,0.0,0.0830078125);
INSERT INTO "probe_saliency" VALUES(4,'08_bar/synth_val_00016',8,2,NULL,8.06451612902575418716e-13,8.06451612902575418716e-13,0.0,0.0,0.0,0.0,0.12109375);
INSERT INTO "probe_saliency" VALUES(4,'08_bar/synth_val_00017',8,2,NULL,1.05263157894626042606e-12,1.05263157894626042606e-12,0.0,0.0,0.0,0.0,0.0927734375);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    created TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT,
    spec TEXT,
    checkpoint_sha256 TEXT,
    data_root TEXT,
    data_fingerprint TEXT,
    seed INTEGER,
    config TEXT NOT NULL,
    version TEXT NOT NULL,
    finished TEXT,
    outputs TEXT
);
INSERT INTO "runs" VALUES(1,'eval','2026-11-24T22:15:23+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',0,'{"batch_size": 64, "class_map": null, "classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "computed_variants": [], "device": "cpu", "mapping": "argmax", "protocol": null, "protocol_settings": null, "seed": 0, "split": "val", "ten_crop": false, "torch": "2.15.0+cu132", "variants": ["original", "only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next"]}','0.1.0','2026-11-24T22:15:23+00:00',NULL);
INSERT INTO "runs" VALUES(2,'challenge','2026-11-24T22:15:35+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',0,'{"classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "full": false, "mapping": "argmax", "precision": "fp32", "seed": 0}','0.1.0','2026-11-24T22:15:35+00:00','{"estimate": false, "files": {}, "numerics": {"fp32": "strict: TF32 and reduced-precision fp32 off for every fp32 forward", "precision": "fp32", "user_fp32_settings": {"cuda.matmul": "none", "cudnn.conv": "tf32", "cudnn.rnn": "tf32", "mkldnn.conv": "none", "mkldnn.matmul": "none", "mkldnn.rnn": "none"}}, "sample": null, "seconds": 0.11}');
INSERT INTO "runs" VALUES(3,'probe_noise','2026-11-24T22:15:45+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',0,'{"batch_size": 64, "bootstrap_replicates": 2000, "class_map": null, "classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "device": "cpu", "draws": "per image: seed, image id, region, level (CPU)", "grid": "custom", "images": 18, "kind": "sigma", "levels": [0.5], "mapping": "argmax", "region": "object", "seed": 0, "split": "val", "trials": 1}','0.1.0','2026-11-24T22:15:45+00:00','{"grid": "custom \u03c3 0.5 (1 level)", "images": 18, "seconds": 0.07}');
INSERT INTO "runs" VALUES(4,'probe_saliency','2026-11-24T22:15:56+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',0,'{"batch_size": 32, "bootstrap_replicates": 2000, "cam": "pytorch-grad-cam GradCAM output (min-max, cv2 bilinear resize, min-max, NaN to 0)", "class_map": null, "classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "device": "cpu", "examples": 0, "images": 18, "label_space": "dataset", "layer": "layer4", "seed": 0, "split": "val"}','0.1.0','2026-11-24T22:15:56+00:00','{"examples": [], "folder": null, "images": 18, "layer": "layer4", "overlays": null, "seconds": 1.14}');
INSERT INTO "runs" VALUES(5,'probe_features','2026-11-24T22:16:07+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',NULL,'{"batch_size": 64, "classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "device": "cpu", "features": 96, "galleries": 0, "group_by": "prediction", "images": 18, "label_space": "dataset", "pooled_is_map_mean": true, "ranking": "Salient ImageNet: weight x mean activation over the group''s images", "rule": "background share > background area share (the map is denser on the background than on the object)", "split": "val", "threshold": null, "top_features": 2, "top_images": 2}','0.1.0','2026-11-24T22:16:07+00:00','{"folder": null, "galleries": {}, "images": 18, "seconds": 0.12}');
INSERT INTO "runs" VALUES(6,'probe_ablate','2026-11-24T22:16:18+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',0,'{"attributes": ["dot", "notch", "rim", "stripes"], "batch_size": 64, "bootstrap_replicates": 2000, "class_map": null, "classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "device": "cpu", "gray": 0.5, "images": 18, "mapping": "argmax", "seed": 0, "split": "val"}','0.1.0','2026-11-24T22:16:18+00:00','{"images": 18, "regions": ["attr:dot", "attr:notch", "attr:rim", "attr:stripes", "bg", "fg"], "seconds": 0.08}');
INSERT INTO "runs" VALUES(7,'probe_attribution','2026-11-24T22:16:28+00:00','done','timm:test_resnet','{"arch": "test_resnet", "checkpoint": null, "checkpoint_sha256": null, "class_names": null, "extra": {"init_seed": 0}, "input_size": [3, 160, 160], "interpolation": "bilinear", "label_space": "dataset", "mean": [0.4717, 0.4499, 0.3837], "name": "timm:test_resnet", "num_classes": 9, "resize": "none", "std": [0.26, 0.2516, 0.2575]}',NULL,'/tmp/oldstore/s9','d7b94d7119fb14e6',0,'{"attributes": ["dot", "notch", "rim", "stripes"], "batch_size": 32, "binarize": "map >= 0.5 * its max, upsampled bilinearly to the image", "bootstrap_replicates": 2000, "classes": ["00_circle", "01_square", "02_triangle", "03_cross", "04_ring", "05_star", "06_diamond", "07_crescent", "08_bar"], "device": "cpu", "features": 96, "images": 18, "seed": 0, "split": "val", "top": 1}','0.1.0','2026-11-24T22:16:28+00:00','{"features": 96, "images": 18, "seconds": 0.07}');
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('runs',7);
COMMIT;
